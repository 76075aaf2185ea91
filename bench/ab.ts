// Development aid: `node --import tsx bench/ab.ts A.yaml B.yaml [seconds] [rounds]` runs the small
// JSON-RPC workload against two gateway deployments and the Node floor, alternating, and prints medians.
// AB_ENTRY_0 / AB_ENTRY_1 run another build for A or B (a copy of an older dist/gateway.js);
// AB_ARGS_0 / AB_ARGS_1 add Node options (say, V8 heap flags), AB_FLOOR_ARGS the floor's (`--cpu-prof`); AB_TWICE_0 / AB_TWICE_1 name labels that get
// two upstreams (the same node twice); AB_CONNECTIONS, AB_METHOD and AB_BATCH (calls
// per batch) change the load,
// and AB_RATE fixes it (requests per second), which compares CPU per request at equal work.
// Each YAML is a gateway config whose upstreams get pointed at the bench node (see gateway-config.ts).
// AB_MINIMAL_0 / AB_MINIMAL_1 start that side from a minimal deployment (the bench node behind `eth`, the
// bench key with a rate, the access log on) instead of today's bench config: an older build refuses
// sections it does not know (plans, cache), so its YAML adds only what that build has.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { packageRoot } from "../src/package-root.js";
import { BENCH_KEY, benchConfig } from "./gateway-config.js";
import { measure, type Target, type Workload } from "./load.js";
import { freePort, start } from "./processes.js";
import { median } from "./stats.js";

const [a, b, seconds = "3", rounds = "4"] = process.argv.slice(2);
// Read before anything starts: a name that is not a file would stop the script with the node and the
// gateways it had started still running.
const overrides = [a, b].map((file) => {
  if (file === undefined || !existsSync(file)) {
    console.error("usage: node --import tsx bench/ab.ts A.yaml B.yaml [seconds] [rounds]");
    process.exit(2);
  }
  return parse(readFileSync(file, "utf8")) ?? {};
});
const root = packageRoot();
const workload: Workload = {
  name: "ab",
  connections: Number(process.env.AB_CONNECTIONS ?? 50),
  method: "POST",
  path: "/",
  body: body(process.env.AB_METHOD ?? "eth_blockNumber", Number(process.env.AB_BATCH ?? 0)),
  label: "eth",
  ...(process.env.AB_RATE === undefined ? {} : { rate: Number(process.env.AB_RATE) }),
};
/** One call, or a batch of `batch` calls when it is above 0. */
function body(method: string, batch: number): string {
  const call = (id: number) => `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":[]}`;
  if (batch === 0) return call(1);
  return `[${Array.from({ length: batch }, (_, i) => call(i + 1)).join(",")}]`;
}

const port = await freePort();
const wsPort = await freePort();
const node = await start(
  "node",
  ["--import", "tsx", "bench/upstream.ts"],
  { BENCH_PORT: `${port}`, BENCH_WS_PORT: `${wsPort}` },
  port,
  root,
);
const targets: Target[] = [];
for (const [i, file] of [a, b].entries()) {
  if (file === undefined) continue;
  const urls = { http: `http://127.0.0.1:${port}`, ws: `ws://127.0.0.1:${wsPort}` };
  const base =
    process.env[`AB_MINIMAL_${i}`] === undefined
      ? benchConfig({ ...urls, labels: ["eth"], twice: process.env[`AB_TWICE_${i}`]?.split(",") ?? [] })
      : minimalConfig(urls);
  const config = join(tmpdir(), `ab-${i}.yaml`);
  writeFileSync(config, stringify({ ...base, ...overrides[i] }));
  const p = await freePort();
  targets.push({
    ...(await start(
      file,
      [...(process.env[`AB_ARGS_${i}`]?.split(" ") ?? []), process.env[`AB_ENTRY_${i}`] ?? "dist/gateway.js"],
      // An operator port of its own: both would take the default 8082, and the second would exit.
      { GATEWAY_CONFIG: config, GATEWAY_PORT: `${p}`, GATEWAY_OPERATOR_PORT: `${await freePort()}` },
      p,
      root,
    )),
    gateway: true,
  });
}
const fp = await freePort();
targets.push({
  ...(await start(
    "floor",
    [...(process.env.AB_FLOOR_ARGS?.split(" ") ?? []), "--import", "tsx", "bench/targets/floor.ts"],
    { BENCH_PORT: `${fp}`, BENCH_UPSTREAM: `http://127.0.0.1:${port}` },
    fp,
    root,
  )),
  gateway: false,
});
const rps = new Map(targets.map((t) => [t.name, [] as number[]]));
const rss = new Map(targets.map((t) => [t.name, [] as number[]]));
const cpu = new Map(targets.map((t) => [t.name, [] as number[]]));
for (const t of targets) await measure(t, workload, 1);
for (let r = 0; r < Number(rounds); r++) {
  for (const t of targets) {
    const sample = await measure(t, workload, Number(seconds));
    rps.get(t.name)?.push(sample.rps);
    rss.get(t.name)?.push(sample.rssBytes / 2 ** 20);
    cpu.get(t.name)?.push(sample.cpuMicros);
  }
}
const floor = median(rps.get("floor") ?? []);
const floorCpu = median(cpu.get("floor") ?? []);
for (const [name, list] of rps) {
  const peak = Math.round(median(rss.get(name) ?? []));
  console.log(
    name.padEnd(24),
    Math.round(median(list)),
    (median(list) / floor).toFixed(2),
    `${peak} MB`,
    `${median(cpu.get(name) ?? []).toFixed(1)} µs/req (${(median(cpu.get(name) ?? []) / floorCpu).toFixed(2)}×)`,
    list.map(Math.round).join(" "),
    "| µs/req",
    (cpu.get(name) ?? []).map((c) => c.toFixed(1)).join(" "),
  );
}
await Promise.all([node, ...targets].map((t) => t.stop()));

/** A deployment every build since the first wave accepts: one label, one key, the access log on. */
function minimalConfig({ http, ws }: { http: string; ws: string }) {
  return {
    domain: "bench.localhost",
    listen: { host: "127.0.0.1", port: 0 },
    upstreams: { eth: [{ url: http, ws }] },
    keys: [{ key: BENCH_KEY, networks: "*", rate: { perSecond: 1e9, burst: 1e9 } }],
    log: { level: "info", access: true },
    operator: null,
  };
}
