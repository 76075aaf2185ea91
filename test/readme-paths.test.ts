import { existsSync, readFileSync } from "node:fs";
import { ServerResponse } from "node:http";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../src/config/defaults.js";
import type { Endpoint } from "../src/registry/types.js";
import { poolPerOrigin } from "../src/upstream/policy.js";
import { ROOT } from "./registry/helpers.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway, TEST_KEYS } from "./support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "./support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "./support/loopback-ws-node.js";
import { everyNodeInRotation } from "./support/rotation.js";
import { nodeState, softwareNode } from "./support/software-node.js";
import { resolveTestHosts } from "./support/test-hosts.js";
import { Client } from "./support/ws-client.js";

// The README's request-flow diagram is how a newcomer finds the code: each file it names by a path must
// be there, under src/ as the diagram says, or from the repository's root (generated/, dist/).
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const section = readme.split("## How a request flows")[1]?.split("\n## ")[0] ?? "";
const diagram = section.split("```")[1] ?? "";
const named = [...new Set(diagram.match(/[\w.-]+\/[\w./-]+\.(?:ts|js)/g) ?? [])];
// every file the section names, with or without a folder: a bare `group.ts` is no path a reader can open
const mentioned = [...new Set(section.match(/(?<![\w./-])[\w.-]+(?:\/[\w.-]+)*\.(?:ts|js)\b/g) ?? [])];

describe("the README's request-flow diagram", () => {
  it("names the files a request passes", () => {
    expect(named.length).toBeGreaterThan(40);
    expect(named).toContain("pipeline/http.ts");
    expect(named).toContain("cache/relay-cached.ts");
    // each runs for requests, and was named nowhere in it (an operator audit): check.ts reads member names
    // through member-case.ts, a WebSocket asks a node at the head through head-reads.ts, every attempt is
    // counted in upstream-counts.ts, every request's series are kept in tables.ts, and a traced one sampled
    for (const file of [
      "jsonrpc/member-case.ts",
      "ws/head-reads.ts",
      "upstream/upstream-counts.ts",
      "metrics/tables.ts",
      "tracing/label-sampler.ts",
    ])
      expect(diagram).toContain(file);
  });

  it("names only files that exist, each by its path", () => {
    const built = (path: string) => path.startsWith("dist/");
    expect(mentioned.length).toBeGreaterThan(named.length);
    const missing = mentioned.filter(
      (path) => !built(path) && !existsSync(join(ROOT, "src", path)) && !existsSync(join(ROOT, path)),
    );
    expect(missing).toEqual([]);
  });
});

/** A source file's path under src/, as the README names it. */
const SRC = `${join(ROOT, "src")}/`;
const underSrc = (url: string): string | undefined => {
  const at = url.indexOf(SRC);
  return at < 0 ? undefined : url.slice(at + SRC.length).replace(/[?#].*$/, "");
};

/** The src/ files of a stack, outermost first, each once. */
const stackFiles = (stack: string): string[] => {
  const frames = [...stack.matchAll(/\(?(\S+?\.ts):\d+:\d+\)?$/gm)].map((m) => underSrc(m[1] ?? ""));
  return [...new Set(frames.filter((f): f is string => f !== undefined).reverse())];
};

// What the README says, checked against what runs: the functions V8 counts as called while the gateway
// serves each kind of request (an inspector session's precise coverage), and the
// stacks an upstream request is dispatched from and its answer written to the caller from. The nodes answer as their
// software does (support/node-software.ts: geth's, algod's and stellar-rpc's envelopes;
// support/loopback-ws-node.ts: geth's over a WebSocket).
describe("the files a request runs, as the README names them", () => {
  const session = new Session();
  const ran = new Map<string, Set<string>>();
  const dispatched: string[][] = [];
  const limited = "FNrdLimited00000000000000000000";
  let nodes: LoopbackNode[] = [];
  let socketNode: LoopbackWsNode;
  let gateways: RunningGateway[] = [];
  let restore: () => void;

  const dispatcherFactory = (origin: string, limits: Parameters<typeof poolPerOrigin>[1]) => {
    const pool = poolPerOrigin(origin, limits);
    const dispatch = pool.dispatch.bind(pool);
    pool.dispatch = (options, handler) => {
      const depth = Error.stackTraceLimit;
      Error.stackTraceLimit = 100;
      dispatched.push(stackFiles(new Error().stack ?? ""));
      Error.stackTraceLimit = depth;
      return dispatch(options, handler);
    };
    return pool;
  };

  /** Runs `serve` once to warm it, then again with V8 counting calls: the src/ files it ran, by kind. */
  async function runs(kind: string, serve: () => Promise<unknown>): Promise<void> {
    await serve();
    await session.post("Profiler.takePreciseCoverage");
    await serve();
    const { result } = await session.post("Profiler.takePreciseCoverage");
    for (const script of result) {
      const file = underSrc(script.url);
      if (file === undefined || !script.functions.some((f) => (f.ranges[0]?.count ?? 0) > 0)) continue;
      ran.set(file, (ran.get(file) ?? new Set()).add(kind));
    }
  }

  beforeAll(async () => {
    restore = resolveTestHosts();
    const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;
    nodes = await Promise.all(
      ["eth", "algo", "xlm"].map((label) =>
        startLoopbackNode(softwareNode(endpoint(label), nodeState(endpoint(label), 1_000))),
      ),
    );
    socketNode = await startLoopbackWsNode({
      results: { eth_blockNumber: "0x3e8", eth_chainId: "0x1", net_version: "1", eth_syncing: false },
    });
    const [eth, algo, xlm] = nodes.map((node) => node.url);
    gateways = await Promise.all([
      startGateway({
        upstreams: { eth: [eth as string], algo: [algo as string], xlm: [xlm as string] },
        dispatcherFactory,
        keys: [...TEST_KEYS, { key: limited, networks: "*", rate: { perSecond: 0.001, burst: 1 } }],
      }),
      startGateway({ upstreams: { eth: [socketNode.url] } }),
      startGateway({
        upstreams: { eth: [eth as string] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        cache: DEFAULT_CACHE,
      }),
    ]);
    await everyNodeInRotation(gateways[2] as RunningGateway, "eth");
    await session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
  });
  afterAll(async () => {
    await session.post("Profiler.stopPreciseCoverage").catch(() => {});
    session.disconnect();
    await Promise.all(gateways.map((gw) => gw.close()));
    await Promise.all(nodes.map((node) => node.close()));
    await socketNode?.close();
    restore?.();
  });

  it("names every src/ file that serving a call runs, of each kind of call", async () => {
    const [gw, socketGw, cachedGw] = gateways as [RunningGateway, RunningGateway, RunningGateway];
    const key = `/${KEYS.all}`;
    const answered = async (served: Promise<{ status: number }>, status = 200) =>
      expect((await served).status).toBe(status);
    await runs("an HTTP call", () => answered(gw.call("eth", key, { body: rpcBody("eth_blockNumber") })));
    const batch = `[${rpcBody("eth_blockNumber", [], 1)},${rpcBody("eth_chainId", [], 2)}]`;
    await runs("a batch", () => answered(gw.call("eth", key, { body: batch })));
    await runs("a REST call", () => answered(gw.call("algo", `${key}/v2/status`)));
    const socket = await Client.open(`ws://eth.${DOMAIN}:${socketGw.port}${key}`);
    await runs("a WebSocket message", () => socket.call("eth_blockNumber"));
    socket.close();
    const bridged = await Client.open(`ws://xlm.${DOMAIN}:${gw.port}${key}`);
    await runs("a WebSocket message over HTTP", () => bridged.call("getLatestLedger", {}));
    bridged.close();
    const asked = () => nodes[0]?.requests.filter((r) => r.body.includes("eth_chainId")).length;
    await cachedGw.call("eth", key, { body: rpcBody("eth_chainId") });
    const before = asked();
    await runs("a cache hit", () => answered(cachedGw.call("eth", key, { body: rpcBody("eth_chainId") })));
    expect(asked()).toBe(before);
    await runs("an unknown method", () =>
      answered(gw.call("eth", key, { body: rpcBody("eth_nosuch") }), 403),
    );
    await gw.call("eth", `/${limited}`, { body: rpcBody("eth_blockNumber") });
    await runs("a call over its rate", () =>
      answered(gw.call("eth", `/${limited}`, { body: rpcBody("eth_blockNumber") }), 429),
    );
    await runs("an unknown key", () =>
      answered(gw.call("eth", `/FNrdUnknown00000000000000000000`, { body: rpcBody("eth_blockNumber") }), 401),
    );

    expect(ran.get("pipeline/http.ts")?.size).toBeGreaterThan(5);
    const unnamed = [...ran]
      .filter(([file]) => !mentioned.includes(file))
      .map(([file, by]) => `${file}: ${[...by].join(", ")}`);
    expect(unnamed).toEqual([]);
  });

  it("names the files an HTTP call passes in the order it passes them, there and back", async () => {
    const gw = gateways[0] as RunningGateway;
    const [there = "", back = ""] = diagram.split("──▶ node");
    const inOrder = (files: readonly string[], text: string) =>
      [...files].sort((a, b) => text.indexOf(a) - text.indexOf(b));
    const end = ServerResponse.prototype.end;
    const written: string[][] = [];
    ServerResponse.prototype.end = function (this: ServerResponse, ...args: unknown[]) {
      const depth = Error.stackTraceLimit;
      Error.stackTraceLimit = 100;
      written.push(stackFiles(new Error().stack ?? ""));
      Error.stackTraceLimit = depth;
      return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as typeof end;
    try {
      for (const [label, path, body] of [
        ["eth", "", rpcBody("eth_blockNumber")],
        ["algo", "/v2/status", undefined],
      ] as const) {
        dispatched.length = 0;
        written.length = 0;
        await gw.call(label, `/${KEYS.all}${path}`, body === undefined ? {} : { body });
        // from the pipeline to the node: pipeline/http.ts → … → upstream/interceptors.ts
        const sent = dispatched[0] ?? [];
        const out = sent.slice(sent.indexOf("pipeline/http.ts")).filter((file) => there.includes(file));
        expect(out.length).toBeGreaterThan(3);
        expect(out).toEqual(inOrder(out, there));
        // from the node to the caller: the frames of the gateway's own answer, each named after the node
        const answer = written.find((files) => files.includes("upstream/response-relay.ts")) ?? [];
        expect(answer.length).toBeGreaterThan(2);
        expect(answer.filter((file) => back.includes(file))).toEqual(answer);
        expect(answer).toEqual(inOrder(answer, back));
      }
    } finally {
      ServerResponse.prototype.end = end;
    }
  });
});

// A newcomer copies the README's upstream examples as they stand. A Substrate node (polkadot since 0.9.43,
// paritytech/polkadot#7363) serves HTTP and WebSocket JSON-RPC on one port, 9944; its HTTP-only 9933 is gone,
// so `GATEWAY_UPSTREAM_DOT=http://my-node:9933` met a refused connection, every call NO_UPSTREAM.
describe("the README's upstream examples", () => {
  it("name the port the node serves JSON-RPC on", () => {
    const examples = [...readme.matchAll(/GATEWAY_UPSTREAM_([A-Z_]+)=http:\/\/[\w.-]+:(\d+)/g)].map(
      ([, label, port]) => [label, port],
    );
    expect(examples).toContainEqual(["DOT", "9944"]);
    const nodePorts: Record<string, string> = { DOT: "9944", ETH: "8545" };
    for (const [label, port] of examples) expect([label, port]).toEqual([label, nodePorts[label as string]]);
  });
});

// bench/README.md names the bench's own files (under bench/) as a reader opens them: each must be there.
describe("bench/README.md", () => {
  it("names only files that exist", () => {
    const bench = readFileSync(join(ROOT, "bench/README.md"), "utf8");
    const files = [
      ...new Set([...bench.matchAll(/`([\w./-]+\.(?:ts|mjs|js))`/g)].map(([, file]) => file as string)),
    ];
    expect(files.length).toBeGreaterThan(10);
    // what `npm run build` makes (dist/) is not in a clean clone: the bench builds it before it runs
    const missing = files.filter(
      (file) =>
        !file.startsWith("dist/") && !existsSync(join(ROOT, "bench", file)) && !existsSync(join(ROOT, file)),
    );
    expect(missing).toEqual([]);
  });
});
