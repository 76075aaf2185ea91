// Fills a gateway's answer cache to its byte budget and past it: distinct final block reads
// (eth_getBlockByNumber at numbers far below the bench node's head), each answer as large as the node
// makes its blocks, until the operator API's gateway_cache_bytes is at the budget and evictions have gone
// on for a while. The gateway's RSS is sampled all along, over all its processes.
import { Pool } from "undici";
import { type CacheSeries, cacheSeries } from "./cache-metrics.js";
import { BENCH_DOMAIN, BENCH_KEY } from "./gateway-config.js";
import type { Target } from "./load.js";
import { samplePeakRss } from "./processes.js";

const CONNECTIONS = 16;
/** Calls between two readings of /metrics. */
const READ_EVERY = 256;

export interface Fill {
  readonly calls: number;
  readonly failures: number;
  /** RSS before the first call, the peak over the fill and the 2 s after it. */
  readonly idleRssBytes: number;
  readonly peakRssBytes: number;
  /** RSS 2 s after the last call. */
  readonly settledRssBytes: number;
  readonly seconds: number;
  /** The cache's series once the fill ended. */
  readonly series: CacheSeries;
}

/**
 * Sends distinct block reads until the cache has held its budget and then let go of `overfill` of it again
 * (in entries: evictions past that share of what it holds), or until `maxCalls`.
 */
export async function fillCache(
  gateway: Target,
  operatorPort: number,
  { overfill, maxCalls }: { overfill: number; maxCalls: number },
): Promise<Fill> {
  const pool = new Pool(`http://127.0.0.1:${gateway.port}`, { connections: CONNECTIONS });
  const idleRssBytes = gateway.rss();
  const peak = samplePeakRss(gateway);
  const started = performance.now();
  let next = 1;
  let failures = 0;
  let done = false;
  const worker = async () => {
    while (!done && next <= maxCalls) {
      const block = next++;
      const { statusCode, body } = await pool.request({
        method: "POST",
        path: `/${BENCH_KEY}`,
        headers: { host: `eth.${BENCH_DOMAIN}`, "content-type": "application/json" },
        body: `{"jsonrpc":"2.0","id":${block + 1},"method":"eth_getBlockByNumber","params":["0x${block.toString(16)}",false]}`,
      });
      await body.dump();
      if (statusCode !== 200) failures++;
    }
  };
  const watcher = async () => {
    let read = 0;
    while (!done && next <= maxCalls) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (next - read < READ_EVERY) continue;
      read = next;
      const series = await cacheSeries(operatorPort, "eth");
      done = series.evictions > 0 && series.evictions >= overfill * series.entries;
    }
    done = true;
  };
  await Promise.all([watcher(), ...Array.from({ length: CONNECTIONS }, worker)]);
  const seconds = (performance.now() - started) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const peakRssBytes = peak();
  const settledRssBytes = gateway.rss();
  await pool.close();
  return {
    calls: next - 1,
    failures,
    idleRssBytes,
    peakRssBytes,
    settledRssBytes,
    seconds,
    series: await cacheSeries(operatorPort, "eth"),
  };
}
