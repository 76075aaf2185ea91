import type { IncomingHttpHeaders } from "node:http";
import { writeTaken } from "../answers/write-taken.js";
import { GatewayError } from "../errors/table.js";
import { type CallerSide, clientGone } from "../http/client-gone.js";
import { type AttemptOutcome, endAttempt } from "../tracing/span-ends.js";
import { TRACE_PARENT_HEADER, traceParentOf } from "../tracing/trace-parent.js";
import type { AttemptGate, AttemptHandler } from "./attempt.js";
import { endAfterThrow } from "./caller-end.js";
import { describeFailure, type FailureKind, failureKind, notBuilt, toGatewayError } from "./failure.js";
import { type AwaitingHedge, hedgeClock } from "./hedge-clock.js";
import type { CappedOptions } from "./interceptors.js";
import { isNodesAnswer, saysUnavailable } from "./node-errors.js";
import type { UpstreamCall } from "./policy.js";
import { type Upstream, upstreamPath } from "./upstreams.js";

/** The most a node's answer saying it cannot serve takes at a success status (`holds`): bitcoind's -28 is ~80 bytes. */
const SAYS_UNAVAILABLE_BYTES = 1024;
/** At most this many upstreams per call: the chosen one and two more. */
export const MAX_ATTEMPTS = 3;

/** Where a call notes what it did (the access line's fields): the upstream tried last, how many, and its time. */
export interface UpstreamFields {
  upstream: string | undefined;
  attempts: number | undefined;
  upstreamMs: number | undefined;
  /** The answering upstream's metric name. */
  answeredBy: string | undefined;
  /**
   * A write's node said it did not take it (answers/write-taken.ts): what was read at the head stands.
   * Read by the pipeline, not logged; the first answer to the write decides.
   */
  refusedWrite: boolean | undefined;
  /**
   * The answer is the node's own error at the interface's error status (registry `nodeErrors`): served,
   * priced and counted as an answer at 200 is, not as a failed node. Read by the pipeline, not logged.
   */
  nodesAnswer: boolean | undefined;
}

// The reason the run gives an attempt it no longer wants; what the attempt does with it is not read.
const DISMISSED = new Error("attempt dismissed");
const PAST_DEADLINE = new Error("the call's deadline passed");

/**
 * One call over the group's upstreams, in the order `choose()` gives, within one deadline
 * (`limits.upstream.deadlineMs`) until an answer's status arrives. docs/upstreams.md has the rules:
 *
 * - A read moves on to the next node when its attempt fails before any byte of the answer (a refused or
 *   reset connection, a 5xx or 429), and also, without giving up on the first, when the first has not
 *   answered within its node's hedge delay (its latency plus four deviations): a hung node costs one
 *   short wait. The first answer to arrive is the one the client gets, whole, from that one node.
 * - A write goes to one node, and to the next only when the connection was refused: it is never sent
 *   twice. Any other failure after it was sent is WRITE_NOT_CONFIRMED.
 *
 * A subclass says what an attempt does with its answer (policy.ts: stream it, or read it whole). A class
 * with methods rather than a function with closures: one of these runs for every call.
 */
export abstract class CallRun<Caller extends CallerSide = CallerSide> implements AttemptGate, AwaitingHedge {
  protected readonly call: UpstreamCall;
  protected readonly res: Caller;
  readonly #note: UpstreamFields;
  #order: readonly Upstream[] = [];
  #next = 0;
  /** Attempts in flight, at most MAX_ATTEMPTS: an array, not a Set, since one is made for every call. */
  readonly #live: AttemptHandler[] = [];
  #winner: AttemptHandler | undefined = undefined;
  #finished = false;
  #lastError: Error | undefined = undefined;
  #deadlineAt = 0;
  #waitedForHead = false;
  /** Until when the call waits for its preferred node to reach the head it needs (`#waitFor`). */
  #preferredBy: number | undefined = undefined;
  #widened = false;
  /** A widened read waits for a node to reach its block: the attempts that fail meanwhile end nothing. */
  #widenPending = false;
  hedgeAt = Number.POSITIVE_INFINITY;
  hedgeSlot = -1;

  /** A write's answer, read whole: whether its node took it, noted once (UpstreamFields.refusedWrite). */
  protected judgeWrite(statusCode: number, body: Buffer): void {
    if (this.call.write && this.#note.refusedWrite === undefined)
      this.#note.refusedWrite = !writeTaken(statusCode, body, this.call.writeIds, this.call.refusedWrite);
  }

  constructor(call: UpstreamCall, res: Caller, note: UpstreamFields) {
    this.call = call;
    this.res = res;
    this.#note = note;
  }

  /** The handler of one attempt on `upstream`. */
  protected abstract attempt(upstream: Upstream): AttemptHandler;

  /** Called once: with nothing when the answer went out whole, else with the failure the caller gets. */
  protected abstract finished(error?: GatewayError): void;

  start(): void {
    // a long poll's node may hold it for its whole hold before answering: the deadline starts after that
    this.#deadlineAt = performance.now() + this.call.limits.deadlineMs + this.call.heldMs;
    this.#begin();
  }

  /**
   * The first attempt, once the group has a node to try. A call that arrives as the prober makes its first
   * verdicts waits for them; a read that needs a head no node in rotation has reached waits for one, about
   * one block, and then goes to the highest (src/answers/).
   */
  #begin(): void {
    const { group, write, atLeast, exclude, pinned, preferred } = this.call;
    if (pinned !== undefined && this.#pinnedNow(pinned)) return;
    this.#order = group.choose(write, atLeast, exclude);
    // a filter is made where the caller's others are, and a writer's calls go where its write went, while
    // that node may take them; a fallback node never goes before a primary in rotation
    const at = preferred === undefined || preferred === exclude ? -1 : this.#order.indexOf(preferred);
    const ahead = preferred !== undefined && mayLead(preferred, this.#order);
    if (at < 0 && ahead && preferred !== exclude && this.#waitFor(preferred as Upstream)) return;
    if (at > 0 && ahead) this.#order = [preferred as Upstream, ...this.#order.filter((m) => m !== preferred)];
    if (this.#order.length === 0 && group.behind(atLeast)) {
      const wait = Math.min(group.headWaitMs, this.#deadlineAt - performance.now());
      if (!this.#waitedForHead && wait > 0 && !clientGone(this.res)) {
        this.#waitedForHead = true;
        group.answers.add("head_wait");
        group.served.whenReached(atLeast, wait, () => this.#begin());
        return;
      }
      group.answers.add("head_wait_in_vain");
      this.#order = group.highestFirst(write);
    }
    if (this.#order.length > 0) {
      this.#launch();
      return;
    }
    const wait = this.#deadlineAt - performance.now();
    if (group.checking && wait > 0 && !clientGone(this.res)) {
      group.whenChecked(wait, () => this.#begin());
      return;
    }
    this.#finish(new GatewayError("NO_UPSTREAM", { reason: group.whyNone(write) }));
  }

  /**
   * A call that uses state its node alone holds (a filter) goes there, and nowhere else: true when it went,
   * or waits. Beside a read that needs a block that node has not reached (a batch with eth_blockNumber), it
   * waits for it, about a block, as a read that found no node there does; in vain, the head rule wins and
   * the call goes where the choice sends it, whose "filter not found" SDKs answer with a new filter: a
   * head that went backwards they could not tell.
   */
  #pinnedNow(pinned: Upstream): boolean {
    const { group, atLeast } = this.call;
    const head = pinned.health.head;
    if (atLeast < 0 || head === undefined || head >= atLeast) {
      this.#order = [pinned];
      this.#launch();
      return true;
    }
    const wait = Math.min(group.headWaitMs, this.#deadlineAt - performance.now());
    if (this.#waitedForHead || wait <= 0) return false;
    this.#waitedForHead = true;
    group.answers.add("head_wait");
    group.served.whenReached(atLeast, wait, () => this.#begin());
    return true;
  }

  /**
   * The preferred node is in rotation but not yet at the head the call needs: the probes see a new block on
   * each node up to a probe apart, and the node that took the caller's write (whose mempool has it) is worth
   * about a block's wait. True while it waits; once it has waited, the call goes where the choice sends it.
   */
  #waitFor(preferred: Upstream): boolean {
    const { group, atLeast } = this.call;
    const head = preferred.health.head;
    if (atLeast < 0 || head === undefined || head >= atLeast || !preferred.health.inRotation) return false;
    const now = performance.now();
    this.#preferredBy ??= now + Math.min(group.headWaitMs, this.#deadlineAt - now);
    const wait = this.#preferredBy - now;
    if (wait <= 0 || clientGone(this.res)) return false;
    // this is the call's wait for the head: once it is over, it goes where the choice sends it at once
    this.#waitedForHead = true;
    group.served.whenReached(atLeast, wait, () => this.#begin());
    return true;
  }

  holds(statusCode: number, headers: IncomingHttpHeaders): boolean {
    // a write's answer goes out only once whole: one its node breaks off (a reset, a stalled body) after
    // the status line is WRITE_NOT_CONFIRMED, which a status already sent could not say
    if (this.call.write) return true;
    const rules = this.call.nodeErrors;
    if (rules === undefined) return false;
    if (statusCode === rules.status) return true;
    // a node that says at this status that it cannot serve (bitcoind 28's -28 to a 2.0 call, at 200) says
    // so in a few dozen bytes: a larger answer is no such saying, and streams as it comes
    return (
      rules.unavailableAt?.includes(statusCode) === true &&
      Number(headers["content-length"] ?? Number.POSITIVE_INFINITY) <= SAYS_UNAVAILABLE_BYTES
    );
  }

  /**
   * A 5xx or a 429 is the node failing; so is a 401, its refusal of the gateway's own credentials (the
   * caller's are never sent on), which a caller would read as its key refused.
   */
  answered(attempt: AttemptHandler, statusCode: number): boolean {
    return this.#answered(attempt, statusCode, failedStatus(statusCode));
  }

  /**
   * An answer at the interface's error status (bitcoind's, ton-http-api's, Octez's 500), read whole: the
   * node's own answer when its body says so (node-errors.ts); any other body (a proxy's error page,
   * bitcoind's -28 while it loads) is a failure, as any 5xx is. A write's answer, held whatever its status,
   * is judged by its status as `answered` judges one.
   */
  answeredWhole(attempt: AttemptHandler, statusCode: number, body: Buffer): boolean {
    const rules = this.call.nodeErrors;
    const failed =
      rules !== undefined && statusCode === rules.status
        ? !isNodesAnswer(body, rules)
        : rules?.unavailableAt?.includes(statusCode) === true
          ? saysUnavailable(body, rules)
          : failedStatus(statusCode);
    const taken = this.#answered(attempt, statusCode, failed);
    if (taken && !failed && statusCode >= 500) this.#note.nodesAnswer = true;
    return taken;
  }

  #answered(attempt: AttemptHandler, statusCode: number, failedStatus: boolean): boolean {
    if (!this.#live.includes(attempt) || this.#winner !== undefined) return false;
    if (failedStatus) {
      attempt.upstream.health.failed("status", `HTTP ${statusCode}`);
      attempt.upstream.counts.failed += 1;
    }
    if (failedStatus) {
      const retry = this.#mayRetry("status");
      // another attempt still on its way (the one a hedge went around) may yet answer well: a failed
      // status does not win over it, nor mark it slow
      const alone = this.#live.length === 1;
      if (retry || !alone || this.#widenPending || this.#mayWiden()) {
        this.#dismiss(attempt, "failed", "status", statusCode);
        if (retry) this.#launch("retry");
        else if (alone && !this.#widenPending) this.#widen();
        return false;
      }
    }
    this.#winner = attempt;
    if (!failedStatus && this.call.writer !== undefined)
      this.call.group.writers.took(this.call.writer, attempt.upstream);
    if (!failedStatus) {
      // a long poll's time is the chain's, not the node's: it would stretch every read's hedge delay
      attempt.upstream.health.succeeded(
        this.call.heldMs > 0 ? undefined : performance.now() - attempt.startedAt,
      );
      attempt.upstream.counts.answered += 1;
    }
    this.#stopWaiting();
    if (this.#live.length > 1) {
      for (const other of this.#live.slice()) {
        if (other === attempt) continue;
        // Started before the winner and outrun by it: that node was slow.
        if (other.startedAt < attempt.startedAt)
          other.upstream.health.outrun("outrun by a hedged attempt on another node");
        other.upstream.counts.dismissed += 1;
        this.#dismiss(other, "dismissed");
        other.abort(DISMISSED);
      }
    }
    return true;
  }

  ended(attempt: AttemptHandler, error?: Error): void {
    if (!this.#live.includes(attempt)) return;
    const kind = error === undefined ? undefined : failureKind(error);
    if (attempt === this.#winner) {
      if (error === undefined) this.#dismiss(attempt, "answered");
      else this.#dismiss(attempt, "failed", kind ?? (error instanceof GatewayError ? error.code : "error"));
      this.#finish(error === undefined ? undefined : toGatewayError(error));
      return;
    }
    this.#dismiss(attempt, kind === undefined ? "dismissed" : "failed", kind);
    // an attempt given up with no fault of its node's (its caller left): counted, as every attempt is
    if (kind === undefined) attempt.upstream.counts.dismissed += 1;
    if (this.#finished) return;
    if (kind !== undefined) {
      attempt.upstream.health.failed(kind, describeFailure(error));
      attempt.upstream.counts.failed += 1;
    }
    this.#lastError = error;
    if (kind !== undefined && this.#mayRetry(kind)) this.#launch("retry");
    else if (this.#live.length > 0 || this.#widenPending) return;
    else if (kind !== undefined && this.#mayWiden()) this.#widen();
    else this.#finish(this.#failure());
  }

  /** The hedge clock's turn: the attempt in flight keeps going, and the next node gets the same read. */
  hedge(now: number): void {
    this.#stopWaiting();
    if (this.#winner !== undefined || this.#finished) return;
    if (now >= this.#deadlineAt) {
      this.#pastDeadline();
      return;
    }
    if (this.#hasAnother() && !clientGone(this.res)) this.#launch("hedge");
    else if (this.#mayWiden()) {
      // the one node at the head is slow: the rest of the label may answer, as when it fails
      this.hedgeAt = this.#deadlineAt;
      hedgeClock.add(this);
      this.#widen("hedge");
    } else {
      this.hedgeAt = this.#deadlineAt;
      hedgeClock.add(this);
    }
  }

  /**
   * No answer's status within the call's deadline: the attempts still waiting (at a slow node, or queued
   * behind the pool's busy connections, which says nothing of the node) are given up. A write that left
   * the gateway may have reached its node: WRITE_NOT_CONFIRMED; one that never got a connection reached
   * none, and may be sent again: UPSTREAM_TIMEOUT.
   */
  #pastDeadline(): void {
    let sent = false;
    for (const attempt of this.#live.slice()) {
      // a node that had the call and did not answer in time failed it, as a headers timeout would say:
      // one that hangs on callers' reads while answering its probes must leave rotation and show failing
      if (attempt.started) {
        sent = true;
        attempt.upstream.health.failed("timeout", "no answer within the call's deadline");
        attempt.upstream.counts.failed += 1;
      } else attempt.upstream.counts.dismissed += 1;
      this.#dismiss(attempt, "failed", "timeout");
      attempt.abort(PAST_DEADLINE);
    }
    if (!this.call.write) this.#finish(new GatewayError("UPSTREAM_TIMEOUT"));
    else if (sent) this.#finish(new GatewayError("WRITE_NOT_CONFIRMED"));
    else
      this.#finish(
        new GatewayError("UPSTREAM_TIMEOUT", {
          reason: "the write waited for a free connection to its node, and was never sent",
        }),
      );
  }

  #launch(why: "first" | "retry" | "hedge" = "first"): void {
    const { call } = this;
    const upstream = this.#order[this.#next++] as Upstream;
    if (why === "retry") upstream.counts.retries += 1;
    else if (why === "hedge") upstream.counts.hedges += 1;
    const attempt = this.attempt(upstream);
    if (call.trace !== undefined)
      attempt.span = call.trace.attempt(upstream.metricName, why, attempt.startedAt);
    this.#live.push(attempt);
    // a call the node holds on purpose (a stream, a long poll) is no sign that it starts to hang: counted
    // in flight, it would take the node's share of every other read (upstreams.ts effectiveWeight)
    if (this.#held) upstream.health.held += 1;
    else upstream.health.inFlight += 1;
    this.#note.upstream = upstream.name;
    this.#note.attempts = this.#next;
    // The clock holds the call's hedge, and its deadline: undici's headers timeout below starts only once a
    // request has a connection, and one queued behind busy connections would otherwise wait without end.
    // a long poll is held by its node until something happens: a second node would only hold it too
    const hedgeAt =
      !call.write && call.heldMs === 0 && (this.#hasAnother() || this.#mayWiden())
        ? attempt.startedAt + upstream.health.hedgeDelay(call.limits.hedgeMinMs, call.limits.hedgeMaxMs)
        : Number.POSITIVE_INFINITY;
    this.hedgeAt = Math.min(hedgeAt, this.#deadlineAt);
    hedgeClock.add(this);
    // Each attempt may wait for its answer's headers until the call's deadline, and no longer than the
    // pool's headers timeout, which undici enforces per request. A long poll's node answers by the end of
    // its hold: one that has not, a hedge's delay later, is hung, and the call's deadline leaves time to
    // ask another node, which, a hold later, has the block that was awaited.
    const remaining = Math.max(1, Math.round(this.#deadlineAt - attempt.startedAt));
    const timeout = call.heldMs > 0 ? call.heldMs + call.limits.hedgeMaxMs : call.limits.headersTimeoutMs;
    try {
      (this.#held ? upstream.streamDispatch : upstream.dispatch)(
        dispatchOptions(upstream, call, attempt, Math.min(timeout, remaining)),
        attempt,
      );
    } catch (error) {
      this.ended(attempt, error as Error);
    }
  }

  #stopWaiting(): void {
    if (this.hedgeAt === Number.POSITIVE_INFINITY) return;
    this.hedgeAt = Number.POSITIVE_INFINITY;
    hedgeClock.delete(this);
  }

  /** The attempt leaves the call, and its span ends with how it went. */
  #dismiss(attempt: AttemptHandler, outcome: AttemptOutcome, failure?: string, status?: number): void {
    const at = this.#live.indexOf(attempt);
    if (at < 0) return;
    this.#live.splice(at, 1);
    if (this.#held) attempt.upstream.health.held -= 1;
    else attempt.upstream.health.inFlight -= 1;
    endAttempt(attempt.span, outcome, failure, status);
  }

  get #held(): boolean {
    return isHeld(this.call);
  }

  #hasAnother(): boolean {
    return this.#next < this.#order.length && this.#next < MAX_ATTEMPTS;
  }

  /** Whether a failure of this kind may be tried on the next node. */
  #mayRetry(kind: FailureKind): boolean {
    if (!this.#hasAnother() || performance.now() >= this.#deadlineAt) return false;
    if (this.res.headersSent || clientGone(this.res)) return false;
    return !this.call.write || kind === "refused";
  }

  /**
   * Whether a read that needs a block, having run out of the nodes that had reached it (the one at the
   * head died under it), may go on to the rest of the group, as a read that found none at the head does.
   */
  #mayWiden(): boolean {
    const { write, atLeast } = this.call;
    if (write || atLeast < 0 || this.#widened || this.#next >= MAX_ATTEMPTS) return false;
    if (performance.now() >= this.#deadlineAt || this.res.headersSent || clientGone(this.res)) return false;
    // by hand, with nothing allocated: this runs at each attempt's launch of a read at the head
    const { group, exclude } = this.call;
    for (const member of group.members) if (member !== exclude && !this.#tried(member)) return true;
    return false;
  }

  #tried(member: Upstream): boolean {
    const at = this.#order.indexOf(member);
    return at >= 0 && at < this.#next;
  }

  /** After `#mayWiden()`: the wait `#begin` makes for a node to reach the block, once, then the rest. */
  #widen(why: "retry" | "hedge" = "retry"): void {
    this.#widened = true;
    const { group, atLeast } = this.call;
    const wait = Math.min(group.headWaitMs, this.#deadlineAt - performance.now());
    // the nodes at the block may all be the ones tried, still in rotation (a hung one is, until the prober
    // sees it): wait for another to get there
    if (!this.#waitedForHead && wait > 0 && this.#untriedAtBlock().length === 0) {
      this.#waitedForHead = true;
      group.answers.add("head_wait");
      this.#widenPending = true;
      group.served.whenReached(atLeast, wait, () => this.#goOnWidened(why));
      return;
    }
    this.#goOnWidened(why);
  }

  #goOnWidened(why: "retry" | "hedge"): void {
    this.#widenPending = false;
    if (this.#finished || this.#winner !== undefined) return;
    const untried = this.#untried();
    if (untried.length === 0 || clientGone(this.res)) {
      // a slow attempt still on its way may yet answer, within the deadline the clock holds
      if (this.#live.length === 0) this.#finish(this.#failure());
      return;
    }
    this.#order = [...this.#order.slice(0, this.#next), ...untried];
    this.#launch(why);
  }

  /** The group's members not yet tried: those at the block first, else the highest first. */
  #untried(): Upstream[] {
    const atBlock = this.#untriedAtBlock();
    if (atBlock.length > 0) return atBlock;
    this.call.group.answers.add("head_wait_in_vain");
    return this.#fresh(this.call.group.highestFirst(this.call.write));
  }

  #untriedAtBlock(): Upstream[] {
    const { group, write, atLeast, exclude } = this.call;
    return this.#fresh(group.choose(write, atLeast, exclude));
  }

  /** Of `list`, the members this call has not tried, nor may. */
  #fresh(list: readonly Upstream[]): Upstream[] {
    return list.filter((m) => m !== this.call.exclude && !this.#tried(m));
  }

  /** What the caller gets when no attempt answered. */
  #failure(): GatewayError {
    const error = this.#lastError;
    if (this.call.write && error !== undefined && !(error instanceof GatewayError)) {
      if (failureKind(error) !== "refused" && !notBuilt(error))
        return new GatewayError("WRITE_NOT_CONFIRMED");
    }
    return toGatewayError(error);
  }

  #finish(error?: GatewayError): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#stopWaiting();
    const winner = this.#winner;
    if (winner !== undefined) {
      this.#note.upstream = winner.upstream.name;
      this.#note.answeredBy = winner.upstream.metricName;
      this.#note.upstreamMs = Math.round(performance.now() - winner.startedAt);
    }
    try {
      this.finished(error);
    } catch (failure) {
      // a bug of the code that reads the answer, thrown where no one would catch it (caller-end.ts)
      if (!endAfterThrow(this.res, failure)) throw failure;
    }
  }
}

/** A status that says the node failed the call (`answered`). */
function failedStatus(statusCode: number): boolean {
  return statusCode >= 500 || statusCode === 429 || statusCode === 401;
}

/** The node holds the call on purpose: a stream while its caller listens, a long poll while it waits. */
export function isHeld(call: UpstreamCall): boolean {
  return call.stream || call.heldMs > 0;
}

/** A fallback node never goes before a primary in rotation, nor is waited for while one is. */
function mayLead(preferred: Upstream, order: readonly Upstream[]): boolean {
  return preferred.tier !== "fallback" || order[0] === undefined || order[0].tier === "fallback";
}

/** The request's headers and the upstream's own, which replace any of the same name. */
function withNodeHeaders(headers: readonly string[], upstream: Upstream): string[] {
  const kept: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (!upstream.headerNames.has(name.toLowerCase())) kept.push(name, headers[i + 1] as string);
  }
  return [...kept, ...upstream.flatHeaders];
}

function dispatchOptions(
  upstream: Upstream,
  call: UpstreamCall,
  attempt: AttemptHandler,
  headersTimeout: number,
): CappedOptions {
  // the operator's headers for the node win over the request's of the same name
  const headers = upstream.hasHeaders ? withNodeHeaders(call.headers, upstream) : call.headers;
  // a traced request's node joins its trace under the attempt's span
  const trace = call.trace;
  return {
    method: call.method,
    path: upstreamPath(upstream, call.path, call.query),
    headers:
      trace === undefined
        ? (headers as string[])
        : [...headers, TRACE_PARENT_HEADER, traceParentOf((attempt.span ?? trace.span).spanContext())],
    body: call.body ?? null,
    headersTimeout,
    // null leaves the pool's own bodyTimeout
    bodyTimeout: call.stream ? 0 : null,
    maxResponseBytes: call.maxBytes,
  };
}
