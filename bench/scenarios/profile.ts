// Where one gateway process spends its CPU on the small JSON-RPC call: the gateway under `node --cpu-prof`
// against the Node floor, alternating, then the profile's top frames by self time. Run alone
// (`npm run bench -- --scenario profile`), not in the full run: the profiler itself costs CPU, so its
// rows are not the one-process check's. docs/performance.md records its output before and after a change.
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compare, summarise } from "../compare.js";
import { topSelfTimes } from "../cpu-profile.js";
import { BENCH_LABELS, benchConfig } from "../gateway-config.js";
import { compiled } from "../launcher.js";
import type { Scenario } from "../scenario.js";
import { SMALL_CALL_50 } from "../workloads.js";

const TOP = 25;

export const profile: Scenario = {
  name: "profile",
  async run(bench) {
    const { launcher, node } = bench;
    const dir = mkdtempSync(join(tmpdir(), "gateway-profile-"));
    const config = benchConfig({ http: node.http, ws: node.ws, labels: BENCH_LABELS, twice: ["eth"] });
    const gateway = await launcher.startGateway("gateway, profiled", {
      deployment: launcher.writeDeployment("profiled", config),
      nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${dir}`],
    });
    const floor = await launcher.start("Node floor", compiled("targets/floor.ts"), {
      BENCH_UPSTREAM: node.http,
    });
    const samples = await compare(SMALL_CALL_50, [floor, gateway], {
      rounds: bench.quick ? 2 : 6,
      seconds: bench.roundSeconds,
      upstream: node.target,
    });
    // The profile is written as the process exits.
    await Promise.all([gateway.stop(), floor.stop()]);
    const rows = summarise(`profiled, ${SMALL_CALL_50.name}`, samples, floor.name);
    const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile"));
    const notes =
      file === undefined
        ? [`profile: no .cpuprofile in ${dir}`]
        : [
            `profile: ${join(dir, file)}; top ${TOP} frames by self time, as a share of the gateway's busy time:`,
            ...topSelfTimes(join(dir, file), TOP).map(
              ({ frame, percent }) => `  ${percent.toFixed(1).padStart(5)}%  ${frame}`,
            ),
          ];
    return { rows, checks: [], notes };
  },
};
