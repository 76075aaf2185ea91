// A dApp's reads, as its pages send them: each client sends calls one after another, drawn from a fixed
// mix (the chain id, the head, blocks, receipts, calls and balances at the head and at final blocks, logs
// over final ranges). Each client draws from a generator seeded by its index, so two runs send the same
// calls in the same order, as far as each gets.
//
// Every eth_blockNumber answer is set against anvil's own head at the moment it arrived: a poller asks
// anvil directly (not through the gateway or the counting forwarder) every POLL_MS and keeps the highest
// head it has seen, a lower bound of the node's head then. An answer more than one block below it is stale.
import { Pool } from "undici";
import type { SeededChain } from "./anvil.js";
import { BENCH_DOMAIN, BENCH_KEY } from "./gateway-config.js";
import type { Target } from "./load.js";
import { samplePeakRss } from "./processes.js";
import { percentile } from "./stats.js";

const POLL_MS = 20;

export interface DappRun {
  readonly seconds: number;
  readonly requests: number;
  /** Non-200 answers, JSON-RPC errors, and requests that got no answer. */
  readonly failures: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly rssBytes: number;
  /** The gateway's CPU per request, µs, over all its processes. */
  readonly cpuMicros: number;
  /** This process's CPU per request, µs: the clients and the poller. */
  readonly clientMicros: number;
  /** eth_blockNumber answers, and how many were more than one block below anvil's head, and one below. */
  readonly heads: number;
  readonly stale: number;
  readonly oneBehind: number;
  /** The `x-cache` header of the answers: hit, miss, coalesced, or none (relayed past the cache). */
  readonly xCache: Readonly<Record<string, number>>;
  /** Failures by what they were: the method and the status, with the error's message or the exception's. */
  readonly failed: Readonly<Record<string, number>>;
}

type Call = readonly [method: string, params: readonly unknown[]];

/** State reads at final blocks read one of this many newest final blocks. */
const STATE_BLOCKS = 16;

/**
 * The mix: each entry makes one call from a random number in [0, 1), with its weight. Blocks, receipts and
 * logs are read at any block final when the chain was seeded; state (eth_call, eth_getBalance) at one of
 * the newest final blocks when the run began (`finalized`): a full node keeps the state of its last 128
 * blocks (registry `reads.archive.fullHistory`), and the gateway sends a state read of an older block to the
 * archive label, which the bench does not deploy.
 */
export function dappMix(
  chain: SeededChain,
  finalized: number,
): readonly [weight: number, make: (r: number) => Call][] {
  const pick = <T>(list: readonly T[], r: number) => list[Math.floor(r * list.length)] as T;
  const hex = (n: number) => `0x${n.toString(16)}`;
  // blocks 1 to the finalized height; logs in windows of 10 blocks of them
  const finalBlock = (r: number) => hex(1 + Math.floor(r * chain.finalized));
  const stateBlock = (r: number) => hex(finalized - Math.floor(r * STATE_BLOCKS));
  const windows = Math.max(1, Math.floor(chain.finalized / 10));
  const logWindow = (r: number) => {
    const from = Math.floor(r * windows) * 10;
    return {
      address: chain.contract,
      fromBlock: hex(from),
      toBlock: hex(Math.min(from + 9, chain.finalized)),
    };
  };
  const call = { to: chain.contract, data: "0x" };
  return [
    [10, () => ["eth_chainId", []]],
    [20, () => ["eth_blockNumber", []]],
    [10, () => ["eth_getBlockByNumber", ["latest", false]]],
    [10, (r) => ["eth_getBlockByNumber", [finalBlock(r), false]]],
    [10, (r) => ["eth_getTransactionReceipt", [pick(chain.transactions, r)]]],
    [10, () => ["eth_call", [call, "latest"]]],
    [5, (r) => ["eth_call", [call, stateBlock(r)]]],
    [10, (r) => ["eth_getBalance", [pick(chain.accounts, r), "latest"]]],
    [5, (r) => ["eth_getBalance", [pick(chain.accounts, r), stateBlock(r)]]],
    [10, (r) => ["eth_getLogs", [logWindow(r)]]],
  ];
}

/** A small seeded generator (mulberry32): the same clients draw the same calls in every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** `clients` clients send the mix through the gateway's `eth` label for `seconds`. */
export async function runDapp(
  gateway: Target,
  nodeUrl: string,
  chain: SeededChain,
  clients: number,
  seconds: number,
): Promise<DappRun> {
  const node = new Pool(nodeUrl, { connections: 1 });
  const nodeCall = async (method: string, params: readonly unknown[]) => {
    const { body } = await node.request({
      method: "POST",
      path: "/",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return (JSON.parse(await body.text()) as { result: unknown }).result;
  };
  const finalized = (await nodeCall("eth_getBlockByNumber", ["finalized", false])) as { number: string };
  const mix = dappMix(chain, Number(finalized.number));
  const total = mix.reduce((sum, [weight]) => sum + weight, 0);
  const draw = (next: () => number): Call => {
    let point = next() * total;
    for (const [weight, make] of mix) {
      point -= weight;
      if (point < 0) return make(next());
    }
    return (mix[0] as (typeof mix)[number])[1](next());
  };

  let head = -1;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      head = Math.max(head, Number(await nodeCall("eth_blockNumber", [])));
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  })();
  while (head < 0) await new Promise((resolve) => setTimeout(resolve, POLL_MS));

  const pool = new Pool(`http://127.0.0.1:${gateway.port}`, { connections: clients });
  const latencies: number[] = [];
  const xCache: Record<string, number> = {};
  const failed: Record<string, number> = {};
  let failures = 0;
  let lost = 0;
  let heads = 0;
  let stale = 0;
  let oneBehind = 0;
  let id = 2; // the prober's calls have id 1 (forwarder.ts tells them apart by it)
  const peak = samplePeakRss(gateway);
  const cpuBefore = gateway.cpu();
  const clientBefore = process.cpuUsage();
  const until = performance.now() + seconds * 1000;
  const client = async (index: number): Promise<void> => {
    const next = random(index + 1);
    while (performance.now() < until) {
      const [method, params] = draw(next);
      const started = performance.now();
      try {
        const answer = await pool.request({
          method: "POST",
          path: `/${BENCH_KEY}`,
          headers: { host: `eth.${BENCH_DOMAIN}`, "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: id++, method, params }),
        });
        const text = await answer.body.text();
        latencies.push(performance.now() - started);
        const cache = String(answer.headers["x-cache"] ?? "none");
        xCache[cache] = (xCache[cache] ?? 0) + 1;
        if (answer.statusCode !== 200 || text.includes('"error":')) {
          failures++;
          const message = /"message":\s*"([^"]{0,80})/.exec(text)?.[1] ?? text.slice(0, 80);
          const kind = `${method} ${answer.statusCode} ${message}`;
          failed[kind] = (failed[kind] ?? 0) + 1;
          continue;
        }
        if (method === "eth_blockNumber") {
          const behind = head - Number((JSON.parse(text) as { result: string }).result);
          heads++;
          if (behind > 1) stale++;
          else if (behind === 1) oneBehind++;
        }
      } catch (error) {
        failures++;
        lost++;
        const kind = `${method} ${(error as Error).message.slice(0, 80)}`;
        failed[kind] = (failed[kind] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, index) => client(index)));
  const requests = latencies.length + lost;
  const used = process.cpuUsage(clientBefore);
  const cpuMicros = ((gateway.cpu() - cpuBefore) * 1e6) / Math.max(1, requests);
  const rssBytes = peak();
  polling = false;
  await poller;
  await Promise.all([pool.close(), node.close()]);
  return {
    seconds,
    requests,
    failures,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    rssBytes,
    cpuMicros,
    clientMicros: (used.user + used.system) / Math.max(1, requests),
    heads,
    stale,
    oneBehind,
    xCache,
    failed,
  };
}
