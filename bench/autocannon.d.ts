// The part of autocannon's API the benchmark uses (the package ships no types).
declare module "autocannon" {
  import type { EventEmitter } from "node:events";

  export interface Options {
    url: string;
    connections: number;
    duration: number;
    method?: "GET" | "POST";
    headers?: Record<string, string>;
    body?: string;
    /** Requests per second across all connections. */
    overallRate?: number;
    /** Called with each connection's client as it is made, before its first request. */
    setupClient?: (client: Client) => void;
  }
  /**
   * One connection. Events: `request` (one written), `response` (status, bytes, ms), `connError` (error),
   * `timeout` (the request waited past `timeout`: the connection is made anew). A connection the server
   * closes is made anew too, without an event: the request it carried is neither answered nor counted.
   */
  export interface Client extends EventEmitter {}
  export interface Histogram {
    average: number;
    p50: number;
    p99: number;
    total: number;
  }
  export interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    /** Every failed request, timeouts included. */
    errors: number;
    timeouts: number;
    non2xx: number;
    duration: number;
  }
  /** A run: awaitable for its result, which `stop()` brings early. */
  export interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void;
  }
  function autocannon(options: Options): Instance;
  export default autocannon;
}
