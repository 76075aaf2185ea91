/**
 * One upstream's health, as live traffic and the prober (prober.ts) report it. docs/upstreams.md has the
 * table of states and what moves a node between them:
 *
 * - healthy:  in rotation.
 * - lagging:  its head is behind the best head of its label's upstreams by more than the threshold.
 * - failing:  a probe failed, a connection was refused, or live calls failed `failAfter` times in a row.
 * - cordoned: an operator took it out; it is still probed, and goes back to what its probes say when
 *             uncordoned.
 *
 * A node leaves rotation at the first sign and comes back only after `recoverAfter` good probes in a row
 * (hysteresis). A failing node is tried again by the prober alone, never by a caller's request.
 */
export type UpstreamState = "healthy" | "lagging" | "failing" | "cordoned";

export interface HealthRules {
  /**
   * Whether live failures take the node out of rotation. Only with a prober: it alone brings a failing
   * node back, so without one (`probeIntervalMs: 0`) nodes stay in rotation and are only ranked.
   */
  readonly takeOut: boolean;
  /** Live calls that fail in a row (5xx, 429, a reset, a timeout) before the node is failing. */
  readonly failAfter: number;
  /** Good probes in a row before a failing or lagging node is back in rotation. */
  readonly recoverAfter: number;
}

/** Why a live call failed, for the health record: a refused connection is proof at once. */
export type FailureKind = "refused" | "reset" | "timeout" | "status";

export type StateListener = (from: UpstreamState, to: UpstreamState, reason: string) => void;

// Latency samples kept for the operator's p50 and p95; the hedge delay uses the smoothed estimate.
const SAMPLES = 256;
// Outcomes kept for the error rate.
const OUTCOMES = 100;

export class UpstreamHealth {
  #condition: Exclude<UpstreamState, "cordoned"> = "healthy";
  #cordoned = false;
  #failuresInRow = 0;
  #goodProbesInRow = 0;
  /** Blocks behind the label's best head at the last probe; 0 until known. */
  #lagBlocks = 0;
  #head: number | undefined = undefined;
  #headAt = 0;
  /** Smoothed latency and its mean deviation, in ms (Jacobson/Karels, as TCP estimates its RTO). */
  #srtt = 0;
  #rttvar = 0;
  readonly #samples = new Float64Array(SAMPLES);
  #sampleCount = 0;
  readonly #outcomes = new Uint8Array(OUTCOMES);
  #outcomeCount = 0;
  #errors = 0;
  inFlight = 0;
  #lastError: string | undefined = undefined;
  #lastErrorAt = 0;
  readonly #rules: HealthRules;
  readonly #listener: StateListener;

  constructor(rules: HealthRules, listener: StateListener) {
    this.#rules = rules;
    this.#listener = listener;
  }

  get state(): UpstreamState {
    return this.#cordoned ? "cordoned" : this.#condition;
  }

  /** Whether callers' requests may go to it. */
  get inRotation(): boolean {
    return !this.#cordoned && this.#condition === "healthy";
  }

  /** Whether it may serve when nothing is in rotation: a lagging node is the least bad. */
  get usableAsLastResort(): boolean {
    return !this.#cordoned && this.#condition === "lagging";
  }

  get head(): number | undefined {
    return this.#head;
  }

  get lagBlocks(): number {
    return this.#lagBlocks;
  }

  /** The smoothed latency in ms; 0 before any sample. */
  get latencyMs(): number {
    return this.#srtt;
  }

  get errorRate(): number {
    const n = Math.min(this.#outcomeCount, OUTCOMES);
    return n === 0 ? 0 : this.#errors / n;
  }

  /**
   * How long an attempt may go without an answer before a read is tried on another node too: the
   * smoothed latency plus four deviations, within [min, max]; `max` before any sample.
   */
  hedgeDelay(min: number, max: number): number {
    if (this.#sampleCount === 0) return max;
    return Math.min(max, Math.max(min, this.#srtt + 4 * this.#rttvar));
  }

  /** A live call answered (any status below 500 but 429): its time to the answer's headers. */
  succeeded(latencyMs: number): void {
    this.#sample(latencyMs);
    this.#outcome(false);
    this.#failuresInRow = 0;
  }

  /** A live call failed; a refused connection takes the node out at once, others after `failAfter` in a row. */
  failed(kind: FailureKind, detail: string): void {
    this.#outcome(true);
    this.#lastError = `${kind}: ${detail}`;
    this.#lastErrorAt = Date.now();
    this.#failuresInRow += 1;
    if (!this.#rules.takeOut) return;
    if (kind === "refused" || this.#failuresInRow >= this.#rules.failAfter) {
      this.#goodProbesInRow = 0;
      this.#become("failing", `${this.#failuresInRow} failed call(s), last ${this.#lastError}`);
    }
  }

  /** A probe read a head. The group then judges it (`judgeProbe`) once it knows the best head. */
  probed(head: number, latencyMs: number): void {
    this.#head = head;
    this.#headAt = Date.now();
    this.#sample(latencyMs);
  }

  /** A probe failed: out of rotation at once. */
  probeFailed(detail: string): void {
    this.#lastError = `probe: ${detail}`;
    this.#lastErrorAt = Date.now();
    this.#goodProbesInRow = 0;
    this.#become("failing", this.#lastError);
  }

  /**
   * After its own good probe: lagging if more than `maxLag` blocks behind the label's best head, else one
   * more good probe towards coming back.
   */
  judgeProbe(bestHead: number, maxLag: number): void {
    if (this.judgeLag(bestHead, maxLag)) return;
    if (this.#condition === "healthy") return;
    this.#goodProbesInRow += 1;
    if (this.#goodProbesInRow >= this.#rules.recoverAfter) {
      this.#failuresInRow = 0;
      this.#become("healthy", `${this.#goodProbesInRow} good probes in a row`);
    }
  }

  /** Against a new best head (another node's probe): lagging, and true, if too far behind it. */
  judgeLag(bestHead: number, maxLag: number): boolean {
    this.#lagBlocks = this.#head === undefined ? 0 : Math.max(0, bestHead - this.#head);
    if (this.#lagBlocks <= maxLag) return false;
    this.#goodProbesInRow = 0;
    this.#become("lagging", `${this.#lagBlocks} blocks behind the best head ${bestHead}`);
    return true;
  }

  cordon(cordoned: boolean): void {
    if (this.#cordoned === cordoned) return;
    const from = this.state;
    this.#cordoned = cordoned;
    this.#listener(from, this.state, cordoned ? "cordoned by an operator" : "uncordoned by an operator");
  }

  /** What the operator API shows. */
  report(): HealthReport {
    const sorted = Array.from(this.#samples.subarray(0, Math.min(this.#sampleCount, SAMPLES))).sort(
      (a, b) => a - b,
    );
    return {
      state: this.state,
      head: this.#head ?? null,
      headAgeMs: this.#head === undefined ? null : Date.now() - this.#headAt,
      lagBlocks: this.#lagBlocks,
      latencyMs: { p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95) },
      errorRate: Math.round(this.errorRate * 1000) / 1000,
      inFlight: this.inFlight,
      lastError: this.#lastError ?? null,
      lastErrorAt: this.#lastError === undefined ? null : new Date(this.#lastErrorAt).toISOString(),
    };
  }

  #become(condition: Exclude<UpstreamState, "cordoned">, reason: string): void {
    if (this.#condition === condition) return;
    const from = this.state;
    this.#condition = condition;
    if (!this.#cordoned) this.#listener(from, this.state, reason);
  }

  #sample(ms: number): void {
    this.#samples[this.#sampleCount % SAMPLES] = ms;
    this.#sampleCount += 1;
    if (this.#sampleCount === 1) {
      this.#srtt = ms;
      this.#rttvar = ms / 2;
    } else {
      this.#rttvar += (Math.abs(this.#srtt - ms) - this.#rttvar) / 4;
      this.#srtt += (ms - this.#srtt) / 8;
    }
  }

  #outcome(error: boolean): void {
    const slot = this.#outcomeCount % OUTCOMES;
    if (this.#outcomeCount >= OUTCOMES) this.#errors -= this.#outcomes[slot] as number;
    this.#outcomes[slot] = error ? 1 : 0;
    if (error) this.#errors += 1;
    this.#outcomeCount += 1;
  }
}

export interface HealthReport {
  readonly state: UpstreamState;
  readonly head: number | null;
  readonly headAgeMs: number | null;
  readonly lagBlocks: number;
  readonly latencyMs: { readonly p50: number | null; readonly p95: number | null };
  readonly errorRate: number;
  readonly inFlight: number;
  readonly lastError: string | null;
  readonly lastErrorAt: string | null;
}

function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const value = sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return Math.round(value * 10) / 10;
}
