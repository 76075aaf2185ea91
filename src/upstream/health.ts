import type { Redact } from "../config/upstream-name.js";
import type { FailureKind } from "./failure.js";

/**
 * One upstream's health, as live traffic and the prober (prober.ts) report it. docs/upstreams.md has the
 * table of states and what moves a node between them:
 *
 * - checking:    not probed yet: which chain it is on and its head are not known, so it gets no call.
 * - healthy:     in rotation.
 * - lagging:     its head is behind the best head of its label's upstreams by more than the threshold.
 * - failing:     a probe found evidence of failure (no connection, no answer in time, a 5xx or 429, an
 *                error object), or live calls failed `failAfter` times in a row.
 * - wrong-chain: it answered that it is on another chain than its label's: it never gets a call.
 * - cordoned:    an operator took it out; it is still probed, and goes back to what its probes say when
 *                uncordoned.
 *
 * A node leaves rotation at the first sign and comes back only after `recoverAfter` good probes in a row
 * (hysteresis); its first probe after a start puts it in rotation at once. A failing node is tried again
 * by the prober, and by callers' reads only while no node of its label is in rotation (group.ts).
 */
export type UpstreamState = "checking" | "healthy" | "lagging" | "failing" | "wrong-chain" | "cordoned";

/** Every state, in the order the operator's views list them. */
export const UPSTREAM_STATES: readonly UpstreamState[] = [
  "checking",
  "healthy",
  "lagging",
  "failing",
  "wrong-chain",
  "cordoned",
];

type Condition = Exclude<UpstreamState, "cordoned">;

export interface HealthRules {
  /**
   * Whether live failures take the node out of rotation. Only with a prober: it alone brings a failing
   * node back, so without one (`probeIntervalMs: 0`) nodes stay in rotation and are only ranked.
   */
  readonly takeOut: boolean;
  /** Live calls that fail in a row (5xx, 429, a reset, a timeout) before the node is failing. */
  readonly failAfter: number;
  /** Good probes in a row before a failing, lagging or wrong-chain node is back in rotation. */
  readonly recoverAfter: number;
}

export type StateListener = (from: UpstreamState, to: UpstreamState, reason: string) => void;

// Latency samples kept for the operator's p50 and p95; the hedge delay uses the smoothed estimate.
const SAMPLES = 256;
// Outcomes kept for the error rate.
const OUTCOMES = 100;

export class UpstreamHealth {
  #condition: Condition;
  #cordoned = false;
  /** Its last failure was a connection that could not be made, and nothing has answered since. */
  #unreachable = false;
  #failuresInRow = 0;
  #goodProbesInRow = 0;
  /** Blocks behind the label's best head at the last probe; 0 until known. */
  #lagBlocks = 0;
  #head: number | undefined = undefined;
  #rose = false;
  #headAt = 0;
  /** Smoothed latency and its mean deviation, in ms (Jacobson/Karels, as TCP estimates its RTO). */
  #srtt = 0;
  #rttvar = 0;
  readonly #samples = new Float64Array(SAMPLES);
  #sampleCount = 0;
  /** Its last live calls' outcomes: what its weight reads. */
  readonly #calls = new Outcomes();
  /** Its last calls' and probes' outcomes: what the operator reads (a node out of rotation gets no call). */
  readonly #observed = new Outcomes();
  inFlight = 0;
  /** Calls it holds on purpose (streams, long polls), which `inFlight` leaves out: an operator's view. */
  held = 0;
  #lastError: string | undefined = undefined;
  #lastErrorAt = 0;
  readonly #rules: HealthRules;
  readonly #listener: StateListener;
  /**
   * Applied to every detail a failure brings, which may be the node's own text (an error page quoting the
   * path it was asked on): the last error and the reasons given to the listener are shown and logged.
   */
  readonly #redact: Redact;
  /**
   * A good probe, its chain's check first where its label has one, judged it since it started or last named
   * another chain (or no prober judges it): its chain is known.
   */
  #vouchedFor: boolean;

  /**
   * `checking` when a prober will judge it first; `healthy` when none will (no probes). `redact` masks the
   * secrets of the upstream's URL and headers (config/upstream-name.ts upstreamRedactor).
   */
  constructor(
    rules: HealthRules,
    listener: StateListener,
    initial: "checking" | "healthy" = "healthy",
    redact: Redact = (text) => text,
  ) {
    this.#rules = rules;
    this.#listener = listener;
    this.#condition = initial;
    this.#redact = redact;
    this.#vouchedFor = initial !== "checking";
  }

  get state(): UpstreamState {
    return this.#cordoned ? "cordoned" : this.#condition;
  }

  /** Whether callers' requests may go to it. */
  get inRotation(): boolean {
    return !this.#cordoned && this.#condition === "healthy";
  }

  /**
   * Whether a read may go to it when no node of its label is in rotation: a lagging or failing node may
   * still answer, and a stale or slow answer is better than none. Never a node on another chain, one not
   * checked yet, or one an operator took out; nor one failing that no good probe has vouched for since it
   * started or named another chain: which chain it is on is not known (a node on another chain whose chain
   * call timed out served that chain's answers as a last resort while the label's node was still checked).
   */
  get usableAsLastResort(): boolean {
    return (
      !this.#cordoned &&
      (this.#condition === "lagging" || (this.#condition === "failing" && this.#vouchedFor))
    );
  }

  /** Its last failure was a connection that could not be made, and nothing has answered since. */
  get unreachable(): boolean {
    return this.#unreachable;
  }

  get head(): number | undefined {
    return this.#head;
  }

  /**
   * Whether its last reading raised a head it had (a block it made or took), rather than giving the first it
   * was known to have: the label's block time counts the one, not the other (served-head.ts).
   */
  get rose(): boolean {
    return this.#rose;
  }

  get lagBlocks(): number {
    return this.#lagBlocks;
  }

  /** The smoothed latency in ms; 0 before any sample. */
  get latencyMs(): number {
    return this.#srtt;
  }

  /**
   * The share of its last live calls that failed, which its weight reads: probes are left out, or a node
   * back from an outage would carry its failed probes and get a tenth of its share for minutes.
   */
  get errorRate(): number {
    return this.#calls.rate;
  }

  /** The share of its last calls and probes that failed: the operator's reading (/upstreams, metrics). */
  get observedErrorRate(): number {
    return this.#observed.rate;
  }

  /**
   * How long an attempt may go without an answer before a read is tried on another node too: the
   * smoothed latency plus four deviations, within [min, max]; `max` before any sample.
   */
  hedgeDelay(min: number, max: number): number {
    if (this.#sampleCount === 0) return max;
    return Math.min(max, Math.max(min, this.#srtt + 4 * this.#rttvar));
  }

  /**
   * A live call answered (any status below 500 but 429): its time to the answer's headers, or undefined
   * for a long poll, whose node held it on purpose.
   */
  succeeded(latencyMs: number | undefined): void {
    if (latencyMs !== undefined) this.#sample(latencyMs);
    this.#outcome(false);
    this.#failuresInRow = 0;
    this.#unreachable = false;
  }

  /** A live call failed; a refused connection takes the node out at once, others after `failAfter` in a row. */
  failed(kind: FailureKind, detail: string): void {
    this.#outcome(true);
    this.#failedInRow(kind, detail);
  }

  /**
   * A live call another node outran (a hedge answered first): slow, which costs it its share of calls and,
   * `failAfter` in a row, its place in rotation, as a timeout does (a node that starts to hang is taken
   * out before it fails outright). Yet it did not fail: the operator's error ratio leaves it out, as
   * gateway_upstream_attempts_total counts it `dismissed` (docs/operations.md).
   */
  outrun(detail: string): void {
    this.#calls.add(true);
    this.#failedInRow("timeout", detail);
  }

  #failedInRow(kind: FailureKind, detail: string): void {
    this.#lastError = `${kind}: ${this.#redact(detail)}`;
    this.#lastErrorAt = Date.now();
    this.#failuresInRow += 1;
    this.#unreachable = kind === "refused";
    if (!this.#rules.takeOut) return;
    if (kind === "refused" || this.#failuresInRow >= this.#rules.failAfter) {
      this.#goodProbesInRow = 0;
      this.#become("failing", `${this.#failuresInRow} failed call(s), last ${this.#lastError}`);
    }
  }

  /** A probe read a head. The group then judges it (`judgeProbe`) once it knows the best head. */
  probed(head: number, latencyMs: number): void {
    this.#rose = this.#head !== undefined && head > this.#head;
    this.#head = head;
    this.#headAt = Date.now();
    this.#answered(latencyMs);
    this.#observed.add(false);
  }

  /**
   * An answer it gave showed a height: its head (`isHead`, the head call's answer), which it now is, or a
   * block it has (a block read at the head), which its head has at least reached.
   */
  answeredHeight(height: number, isHead: boolean): void {
    if (!isHead && this.#head !== undefined && height <= this.#head) return;
    this.#rose = this.#head !== undefined && height > this.#head;
    this.#head = height;
    this.#headAt = Date.now();
  }

  /**
   * A probe was answered, but its answer holds no head the registry's field and encoding can read (a
   * node at its genesis, a proxy's page): the head is unknown, which is no evidence that the node failed.
   */
  headUnknown(detail: string, latencyMs: number): void {
    this.#head = undefined;
    this.#lagBlocks = 0;
    this.#lastError = `probe: head unknown: ${this.#redact(detail)}`;
    this.#lastErrorAt = Date.now();
    this.#answered(latencyMs);
  }

  /** A probe found evidence of failure: out of rotation at once. */
  probeFailed(kind: FailureKind, detail: string): void {
    this.#observed.add(true);
    this.#lastError = `probe: ${this.#redact(detail)}`;
    this.#lastErrorAt = Date.now();
    this.#goodProbesInRow = 0;
    this.#unreachable = kind === "refused";
    this.#become("failing", this.#lastError);
  }

  /** It answered that it is on another chain: it gets no call until it answers its own again. */
  wrongChain(unredacted: string): void {
    // the chain it named is the node's text
    const detail = this.#redact(unredacted);
    this.#lastError = `probe: ${detail}`;
    this.#lastErrorAt = Date.now();
    this.#goodProbesInRow = 0;
    this.#head = undefined;
    this.#lagBlocks = 0;
    this.#vouchedFor = false;
    this.#become("wrong-chain", detail);
  }

  /**
   * After its own good probe: lagging if more than `maxLag` blocks behind the label's best head, else one
   * more good probe towards coming back. A node's first probe after a start settles it at once.
   */
  judgeProbe(bestHead: number, maxLag: number): void {
    this.#vouchedFor = true;
    if (this.#condition === "checking") {
      if (!this.judgeLag(bestHead, maxLag)) this.#become("healthy", "first probe");
      return;
    }
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

  /** Its lag against a new best head, and nothing more: a failing node's, whose state its probes decide. */
  noteLag(bestHead: number): void {
    this.#lagBlocks = this.#head === undefined ? 0 : Math.max(0, bestHead - this.#head);
  }

  /** Whether its head may count towards its label's best head: not a node on another chain or failing. */
  get headCounts(): boolean {
    return this.#head !== undefined && this.#condition !== "failing" && this.#condition !== "wrong-chain";
  }

  cordon(cordoned: boolean): void {
    if (this.#cordoned === cordoned) return;
    const from = this.state;
    this.#cordoned = cordoned;
    this.#listener(from, this.state, cordoned ? "cordoned by an operator" : "uncordoned by an operator");
  }

  /**
   * Cordoned as the same upstream was in the config a reload replaced: no change of state to log or count,
   * since the node was out of rotation already.
   */
  keepCordon(): void {
    this.#cordoned = true;
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
      errorRate: Math.round(this.observedErrorRate * 1000) / 1000,
      inFlight: this.inFlight,
      held: this.held,
      lastError: this.#lastError ?? null,
      lastErrorAt: this.#lastError === undefined ? null : new Date(this.#lastErrorAt).toISOString(),
    };
  }

  #answered(latencyMs: number): void {
    this.#unreachable = false;
    this.#sample(latencyMs);
  }

  #become(condition: Condition, reason: string): void {
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
    this.#calls.add(error);
    this.#observed.add(error);
  }
}

/** The last OUTCOMES outcomes, and the share of them that failed. */
class Outcomes {
  readonly #outcomes = new Uint8Array(OUTCOMES);
  #count = 0;
  #errors = 0;

  add(error: boolean): void {
    const slot = this.#count % OUTCOMES;
    if (this.#count >= OUTCOMES) this.#errors -= this.#outcomes[slot] as number;
    this.#outcomes[slot] = error ? 1 : 0;
    if (error) this.#errors += 1;
    this.#count += 1;
  }

  get rate(): number {
    const n = Math.min(this.#count, OUTCOMES);
    return n === 0 ? 0 : this.#errors / n;
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
  readonly held: number;
  readonly lastError: string | null;
  readonly lastErrorAt: string | null;
}

function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const value = sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return Math.round(value * 10) / 10;
}
