import autocannon from "autocannon";
import { request } from "undici";
import { BENCH_DOMAIN, BENCH_KEY } from "./gateway-config.js";
import { type Running, samplePeakRss } from "./processes.js";

/** One kind of request, as a client of the gateway sends it and as a client of a plain proxy sends it. */
export interface Workload {
  readonly name: string;
  readonly connections: number;
  readonly method: "GET" | "POST";
  /** The upstream path; the gateway gets `/<key>` in front of it. */
  readonly path: string;
  readonly body?: string;
  /** The gateway's host label. */
  readonly label: string;
  /** A fixed offered load in requests per second, for comparing CPU per request at equal load. */
  readonly rate?: number;
}

export interface Target extends Running {
  /** Whether requests need the gateway's Host label and key path. */
  readonly gateway: boolean;
  /** A host label of its own, in place of the workload's. */
  readonly label?: string;
}

export interface Sample {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly rssBytes: number;
  /** The target's CPU time (all its processes) per completed request, in microseconds. */
  readonly cpuMicros: number;
  /** The load generator's (this process's) CPU time per request, in microseconds. */
  readonly clientMicros: number;
  /** The upstream node's CPU time per request, in microseconds, when it was given. */
  readonly upstreamMicros: number | undefined;
  readonly failures: number;
}

export async function measure(
  target: Target,
  workload: Workload,
  seconds: number,
  upstream?: Running,
): Promise<Sample> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (target.gateway) headers.host = `${target.label ?? workload.label}.${BENCH_DOMAIN}`;
  const path = target.gateway ? `/${BENCH_KEY}${workload.path}` : workload.path;
  const peak = samplePeakRss(target);
  const cpuBefore = target.cpu();
  const upstreamBefore = upstream?.cpu() ?? 0;
  const clientBefore = process.cpuUsage();
  const result = await autocannon({
    url: `http://127.0.0.1:${target.port}${path}`,
    connections: workload.connections,
    duration: seconds,
    method: workload.method,
    headers,
    ...(workload.body === undefined ? {} : { body: workload.body }),
    ...(workload.rate === undefined ? {} : { overallRate: workload.rate }),
  });
  const client = process.cpuUsage(clientBefore);
  const requests = Math.max(1, result.requests.total);
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    rssBytes: peak(),
    cpuMicros: ((target.cpu() - cpuBefore) * 1e6) / requests,
    clientMicros: (client.user + client.system) / requests,
    upstreamMicros: upstream && ((upstream.cpu() - upstreamBefore) * 1e6) / requests,
    // A run in which nothing completed is a failure too: the target stalled.
    failures: result.errors + result.timeouts + result.non2xx + (result.requests.total === 0 ? 1 : 0),
  };
}

/**
 * Waits for a fresh gateway's prober to give its first verdicts on `label`'s nodes (and learn what they
 * hold final), then until `body` gets a 200 through it.
 */
export async function untilAnswering(
  gateway: Target,
  label = "eth",
  body = '{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]}',
): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  for (let tries = 0; tries < 50; tries++) {
    const answer = await request(`http://127.0.0.1:${gateway.port}/${BENCH_KEY}`, {
      method: "POST",
      headers: { host: `${label}.${BENCH_DOMAIN}`, "content-type": "application/json" },
      body,
    }).catch(() => undefined);
    await answer?.body.dump();
    if (answer?.statusCode === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${gateway.name} did not answer ${body} on ${label}`);
}
