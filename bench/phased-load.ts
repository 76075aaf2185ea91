// Load that runs without a break while a scenario changes things under it, read phase by phase (before a
// fault, the window after it, …). autocannon's result covers its whole run, so every answer and failure is
// counted from its connection's events, into the phase current when it completed.
import autocannon, { type Client } from "autocannon";
import { BENCH_DOMAIN, BENCH_KEY } from "./gateway-config.js";
import type { Target, Workload } from "./load.js";
import { percentile } from "./stats.js";

export interface PhaseResult {
  readonly seconds: number;
  /** Answers of any status. */
  readonly answered: number;
  /** Non-2xx answers, errors and timeouts (autocannon's), and requests lost with their connection. */
  readonly failed: number;
  /** Of `failed`: requests whose connection the server closed without answering them. */
  readonly lost: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** What a phase counts as its connections report. */
export interface Tally {
  answered: number;
  failed: number;
  lost: number;
  /** Each answer's time, in ms. */
  readonly latencies: number[];
}

class Phase implements Tally {
  readonly startedAt = performance.now();
  endedAt: number | undefined = undefined;
  answered = 0;
  failed = 0;
  lost = 0;
  readonly latencies: number[] = [];

  result(): PhaseResult {
    const seconds = ((this.endedAt ?? performance.now()) - this.startedAt) / 1000;
    return {
      seconds,
      answered: this.answered,
      failed: this.failed,
      lost: this.lost,
      p99Ms: percentile(this.latencies, 99),
      maxMs: this.latencies.reduce((max, ms) => Math.max(max, ms), 0),
    };
  }
}

/**
 * Counts one connection's requests into the current phase. A connection has one request out at a time
 * (no pipelining), so a request written while the last is still out means the last was lost: the server
 * closed the connection and autocannon made a new one, which it counts nowhere. A timeout also makes a
 * new connection, writing the next request before it reports the timeout, so that loss is counted once,
 * as the timeout.
 */
export function countRequests(client: Client, tally: () => Tally): void {
  let out = false;
  client.on("request", () => {
    if (out) {
      tally().failed += 1;
      tally().lost += 1;
    }
    out = true;
  });
  client.on("response", (status: number, _bytes: number, ms: number) => {
    out = false;
    const current = tally();
    current.answered += 1;
    current.latencies.push(ms);
    if (status < 200 || status >= 300) current.failed += 1;
  });
  client.on("connError", () => {
    out = false;
    tally().failed += 1;
  });
  client.on("timeout", () => {
    tally().lost -= 1;
  });
}

export class PhasedLoad {
  readonly #phases = new Map<string, Phase>();
  #current: Phase;
  readonly #run: ReturnType<typeof autocannon>;

  /** Starts `workload` on `target` in phase `first`; it runs until `stop()` (or `maxSeconds`). */
  constructor(target: Target, workload: Workload, first: string, maxSeconds = 600) {
    this.#current = this.#begin(first);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (target.gateway) headers.host = `${target.label ?? workload.label}.${BENCH_DOMAIN}`;
    const path = target.gateway ? `/${BENCH_KEY}${workload.path}` : workload.path;
    this.#run = autocannon({
      url: `http://127.0.0.1:${target.port}${path}`,
      connections: workload.connections,
      duration: maxSeconds,
      method: workload.method,
      headers,
      ...(workload.body === undefined ? {} : { body: workload.body }),
      setupClient: (client) => countRequests(client, () => this.#current),
    });
  }

  /** Ends the current phase now and begins `name`. */
  phase(name: string): void {
    this.#current.endedAt = performance.now();
    this.#current = this.#begin(name);
  }

  /** Stops the load (requests still out are not counted) and returns every phase. */
  async stop(): Promise<Map<string, PhaseResult>> {
    this.#current.endedAt = performance.now();
    // Whatever completes while autocannon winds down falls into a phase that is not returned.
    this.#current = new Phase();
    this.#run.stop();
    await this.#run;
    return new Map([...this.#phases].map(([name, phase]) => [name, phase.result()]));
  }

  #begin(name: string): Phase {
    const phase = new Phase();
    this.#phases.set(name, phase);
    return phase;
  }
}
