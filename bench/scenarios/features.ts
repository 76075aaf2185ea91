// What each feature of the bench's deployment costs in CPU per request, read in the same seconds: the Node
// floor, the deployment and variants of it with one thing turned off are all loaded at once, each at the
// same fixed rate, and each process's CPU is read over the same windows. On these shared VMs one process
// read 82 to 176 µs per request in consecutive 10-second windows (docs/performance.md, "What each feature
// costs"), so runs one after the other cannot see a few percent; whatever the host does to a window here,
// it does to every target in it. Run on request: `npm run bench -- --scenario features`.
import { BENCH_LABELS, benchConfig } from "../gateway-config.js";
import { compiled } from "../launcher.js";
import { measure, type Target, untilAnswering, type Workload } from "../load.js";
import type { Scenario } from "../scenario.js";
import { median } from "../stats.js";
import { SMALL_CALL_50 } from "../workloads.js";

/** The bench's deployment as the variants edit it: each turns one thing off. */
interface Deployment {
  readonly [field: string]: unknown;
  readonly keys: readonly { readonly settings?: unknown }[];
  readonly upstreams: Readonly<Record<string, readonly unknown[]>>;
  readonly log: object;
}

const NO_LOG = (c: Deployment): Deployment => ({ ...c, log: { ...c.log, access: false } });
const NO_METRICS = (c: Deployment): Deployment => ({ ...c, metrics: { enabled: false } });
const NO_SETTINGS = (c: Deployment): Deployment => ({
  ...c,
  keys: c.keys.map(({ settings: _settings, ...key }) => key),
});
const ONE_UPSTREAM = (c: Deployment): Deployment => ({
  ...c,
  upstreams: { ...c.upstreams, eth: c.upstreams.eth?.slice(0, 1) ?? [] },
});

/** The deployment, and each variant with what it turns off. */
const VARIANTS: readonly { name: string; edit: (c: Deployment) => Deployment }[] = [
  { name: "the bench's deployment", edit: (c) => c },
  { name: "no access log", edit: NO_LOG },
  { name: "no metrics", edit: NO_METRICS },
  { name: "no key settings", edit: NO_SETTINGS },
  { name: "one upstream for eth", edit: ONE_UPSTREAM },
  { name: "cache off", edit: (c) => ({ ...c, cache: { enabled: false } }) },
  {
    name: "all four off: log, metrics, settings, second upstream",
    edit: (c) => NO_LOG(NO_METRICS(NO_SETTINGS(ONE_UPSTREAM(c)))),
  },
];

/**
 * FEATURES_BUILDS=`name=path,name=path` compares builds instead of features: the deployment on each build
 * (copies of an earlier dist/gateway.js, with its .map beside it), loaded at once as the variants are. A
 * change of a few percent shows here and nowhere else on these hosts. Node flags may follow a path, after a
 * space (`new=dist/gateway.js --single-threaded-gc`), to compare runtime settings of one build.
 */
function builds(): { name: string; entry: string; nodeArgs: string[] }[] | undefined {
  const list = process.env.FEATURES_BUILDS;
  if (list === undefined || list === "") return undefined;
  return list.split(",").map((item) => {
    const [name = "", command = ""] = item.split("=");
    const [entry = "", ...nodeArgs] = command.trim().split(/\s+/);
    if (name === "" || entry === "") throw new Error(`FEATURES_BUILDS: "${item}" is not name=path`);
    return { name, entry, nodeArgs };
  });
}

/** Each target's offered load: far below what one process serves, so none saturates with all at once. */
const RATE = 700;
const WORKLOAD: Workload = {
  ...SMALL_CALL_50,
  name: "eth_blockNumber, 25 conns, 700 req/s",
  connections: 25,
  rate: RATE,
};

/** The cache's hit path instead, with FEATURES_CALL=eth_chainId: a call the cache keeps for good. */
function workload(): Workload {
  const method = process.env.FEATURES_CALL;
  if (method === undefined || method === "" || method === "eth_blockNumber") return WORKLOAD;
  return {
    ...WORKLOAD,
    name: `${method}, 25 conns, ${RATE} req/s`,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
  };
}

export const featureCosts: Scenario = {
  name: "features",
  async run(bench) {
    const { launcher, node } = bench;
    const base: Deployment = benchConfig({
      http: node.http,
      ws: node.ws,
      labels: BENCH_LABELS,
      twice: ["eth"],
    });
    const floor = await launcher.start("Node floor", compiled("targets/floor.ts"), {
      BENCH_UPSTREAM: node.http,
    });
    const gateways: Target[] = [];
    const entries = builds();
    if (entries !== undefined) {
      const deployment = launcher.writeDeployment("feature-builds", base);
      for (const { name, entry, nodeArgs } of entries)
        gateways.push(await launcher.startGateway(`build ${name}`, { deployment, entry, nodeArgs }));
    } else {
      for (const [i, variant] of VARIANTS.entries()) {
        const deployment = launcher.writeDeployment(`feature-${i}`, variant.edit(base));
        gateways.push(await launcher.startGateway(variant.name, { deployment }));
      }
    }
    await Promise.all(gateways.map((gateway) => untilAnswering(gateway)));
    bench.progress(`the floor and ${gateways.length} deployments listening`);
    const targets = [floor, ...gateways];
    const load = workload();
    const seconds = bench.quick ? 3 : 10;
    await Promise.all(targets.map((target) => measure(target, load, 2)));
    const cpu: number[][] = targets.map(() => []);
    const failures = targets.map(() => 0);
    for (let round = 0; round < (bench.quick ? 2 : 6); round++) {
      const samples = await Promise.all(targets.map((target) => measure(target, load, seconds)));
      samples.forEach((sample, i) => {
        cpu[i]?.push(sample.cpuMicros);
        failures[i] = (failures[i] ?? 0) + sample.failures;
      });
    }
    await Promise.all(targets.map((target) => target.stop()));
    const [floorCpu = [], fullCpu = []] = cpu;
    const ratios = (of: readonly number[], to: readonly number[]) => of.map((v, i) => v / (to[i] as number));
    const notes = gateways.map((gateway, g) => {
      const own = cpu[g + 1] ?? [];
      const toFloor = ratios(own, floorCpu);
      return `features, ${load.name} on every target at once, ${own.length} windows: ${gateway.name} at ${median(toFloor).toFixed(2)}× the floor's CPU per request (${Math.min(...toFloor).toFixed(2)}–${Math.max(...toFloor).toFixed(2)}), ${median(ratios(own, fullCpu)).toFixed(2)}× ${gateways[0]?.name ?? "the deployment"}'s; ${median(own).toFixed(1)} µs against the floor's ${median(floorCpu).toFixed(1)}${failures[g + 1] ? `; ${failures[g + 1]} failed` : ""}`;
    });
    return { rows: [], checks: [], notes };
  },
};
