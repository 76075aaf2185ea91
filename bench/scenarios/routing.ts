// Routing cost: the same in-process gateway with the committed table and with one that the real codegen
// made from the registry plus 1,000 invented networks, alternating. Both run under tsx, so they are
// compared with each other only.
import { join } from "node:path";
import { compare, summarise } from "../compare.js";
import { tsx } from "../launcher.js";
import type { Check, Row } from "../report.js";
import type { Scenario } from "../scenario.js";
import { pairedRatio } from "../stats.js";
import { buildSyntheticRegistry, SYNTHETIC_NETWORKS } from "../synthetic-registry.js";
import { SMALL_CALL_50 } from "../workloads.js";

const REAL_REGISTRY = "gateway, real registry";
const BIG_REGISTRY = `gateway, +${SYNTHETIC_NETWORKS} networks`;

export const routingCost: Scenario = {
  name: "routing cost",
  async run(bench) {
    const { launcher, node } = bench;
    const synthetic = buildSyntheticRegistry(launcher.root, join(launcher.dir, "synthetic"));
    bench.progress(`codegen of the ${SYNTHETIC_NETWORKS}-network registry`);
    const inproc = (label: string, endpoints?: string) => ({
      BENCH_UPSTREAM: node.http,
      BENCH_UPSTREAM_WS: node.ws,
      BENCH_LABEL: label,
      ...(endpoints === undefined ? {} : { BENCH_ENDPOINTS: endpoints }),
    });
    const entry = tsx("targets/gateway-inproc.ts");
    const real = await launcher.start(REAL_REGISTRY, entry, inproc("eth"), { gateway: true });
    const big = await launcher.start(BIG_REGISTRY, entry, inproc(synthetic.label, synthetic.endpoints), {
      gateway: true,
    });
    bench.progress("in-process gateways listening");
    // Two targets only, and a 5% question: more, shorter rounds (as many in each order), so that one noisy
    // round cannot move a direction's median; with 4 per direction one round at half speed read 93%.
    const samples = await compare(SMALL_CALL_50, [real, { ...big, label: synthetic.label }], {
      rounds: bench.quick ? 2 : 12,
      seconds: bench.roundSeconds,
    });
    await Promise.all([real.stop(), big.stop()]);
    const rows = summarise(`routing, ${SMALL_CALL_50.name}`, samples, undefined);
    return { rows, checks: judge(rows) };
  },
};

function judge(rows: readonly Row[]): Check[] {
  const real = rows.find((r) => r.target === REAL_REGISTRY);
  const big = rows.find((r) => r.target === BIG_REGISTRY);
  if (!real || !big) return [];
  const ratio = pairedRatio(big.roundRps, real.roundRps);
  // a failed call is answered sooner than a relayed one: the ratio means something only when none failed
  const failed = real.failures + big.failures;
  return [
    {
      name: `${SYNTHETIC_NETWORKS}-network registry within 5% of the real one, no call failed`,
      pass: ratio >= 0.95 && failed === 0,
      measured: `${(ratio * 100).toFixed(1)}%${failed === 0 ? "" : `, ${failed} calls failed`}`,
    },
  ];
}
