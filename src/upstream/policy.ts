import type { ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { WebSocket } from "ws";
import type { TierPlan } from "../answers/archive.js";
import { learnHeights, showsHeight } from "../answers/examined.js";
import { filterSpan, type RangeSplit } from "../answers/range-plan.js";
import type { ReadNeed } from "../answers/read-need.js";
import type { BatchRead } from "../cache/batch-cached.js";
import type { CacheRead } from "../cache/cache-read.js";
import type { Limits } from "../config/types.js";
import { GatewayError } from "../errors/table.js";
import { type CallerSide, clientGone } from "../http/client-gone.js";
import { idKey } from "../jsonrpc/id-key.js";
import { OPEN_ARRAY, OPEN_OBJECT } from "../jsonrpc/json-chars.js";
import { nestsDeeperThan, scanMembers } from "../jsonrpc/scan.js";
import type { BodyTest, NodeErrors } from "../registry/types.js";
import type { RequestTrace } from "../tracing/tracing.js";
import type { AttemptHandler } from "./attempt.js";
import { BufferedAnswer, type WholeAnswer } from "./buffered-answer.js";
import { CallRun, MAX_ATTEMPTS, type UpstreamFields } from "./call-run.js";
import { deadlineError, describeFailure, failureKind } from "./failure.js";
import type { UpstreamGroup } from "./group.js";
import { type AnswerReader, ResponseRelay } from "./response-relay.js";
import { Pool } from "./undici-pool.js";
import type { Upstream } from "./upstreams.js";

// The upstream policy, composed here: a call's upstreams come from the group's choice (group.ts),
// its attempts, hedges, retries and deadline from CallRun (call-run.ts), its timeouts from the pool and
// the limits, and its size cap from the plan. The HTTP relay, the merged batch and the WebSocket upgrade
// all choose through the same group.

/** One upstream call, as stage 6 (pipeline/stages.ts) planned it. */
export interface UpstreamCall {
  readonly group: UpstreamGroup;
  readonly method: Dispatcher.HttpMethod;
  /** The caller's path below the key, and its query string with its "?" (or ""). */
  readonly path: string;
  readonly query: string;
  /** The node's request headers, as undici's flat list of names and values (pipeline/admitted.ts). */
  readonly headers: readonly string[];
  readonly body: string | Buffer | undefined;
  /** A long-lived stream: no body timeout, chunks flushed as they arrive. */
  readonly stream: boolean;
  /**
   * A long poll's hold (registry `longPolls`), else 0: its node answers once something happens, up to this
   * long. Its deadline is that much later, it is never hedged, and its wait is not the node's latency.
   */
  readonly heldMs: number;
  /** It submits something (registry `writes`): never sent to a second node unless the first refused it. */
  readonly write: boolean;
  /** A batch's writes, by their ids (families/family.ts `Outgoing`). */
  readonly writeIds: readonly string[] | undefined;
  /**
   * How the node answers its own errors at a 5xx status (registry `errorStatus`): an answer at that status
   * is read whole, then relayed as the node's answer or taken for a failure (call-run.ts `holds`).
   */
  readonly nodeErrors: NodeErrors | undefined;
  /** How its node refuses a write at a success status (registry `refusedWrite`). */
  readonly refusedWrite: readonly BodyTest[] | undefined;
  /** Past this many answer bytes the call is aborted; Infinity for streams. */
  readonly maxBytes: number;
  /**
   * The lowest head a node must have reached to take the call (src/answers/): the label's served head for a
   * read at the head, the block a read names by number; -1 for any node.
   */
  readonly atLeast: number;
  /** What its reads need, when any reads by block: answers that show a height are read as they go out. */
  readonly reads: ReadNeed | undefined;
  /** A range call wider than its split limit: it runs as sub-ranges (src/answers/range-split.ts). */
  readonly split: RangeSplit | undefined;
  /** A read of state at a numbered block on a full label: it may go to archive nodes (src/answers/archive.ts). */
  readonly tier: TierPlan | undefined;
  /** A read by block hash that a node may not know yet: asked of another node on null (src/answers/by-hash.ts). */
  readonly byHash: boolean;
  /** A single call the label's answer cache may answer (src/cache/relay-cached.ts). */
  readonly cache: CacheRead | undefined;
  /** A batch's calls, each with what the cache may answer it with, when any may be (src/cache/batch-cached.ts). */
  readonly cacheBatch: readonly BatchRead[] | undefined;
  /** The request's trace, when tracing is on: each attempt makes a span under it (src/tracing/). */
  readonly trace: RequestTrace | undefined;
  /** The one node to ask: the one that made the state the call uses (a filter: registry `reads.handles`). */
  readonly pinned: Upstream | undefined;
  /** The node to try first, others after it: where the caller's filters are, for a call that makes one. */
  readonly preferred: Upstream | undefined;
  /** Who a call that makes such state makes it for (the caller's key or address): theirs alone to use. */
  readonly handleOwner: string | undefined;
  /** A write's caller (its key or address): the node that takes it gets that caller's next calls first. */
  readonly writer: string | undefined;
  /** A node not to ask: the one that already answered null to this read. */
  readonly exclude: Upstream | undefined;
  readonly limits: Limits["upstream"];
}

/** Called once when a relay is over: with nothing when the answer went out whole, else with why not. */
/** A relay's end: its error, if it failed. */
export type RelayDone = (error?: unknown) => void;

/** One keep-alive undici Pool per upstream origin, with every timeout set (undici's defaults are 300 s). */
export function poolPerOrigin(origin: string, limits: Limits["upstream"]): Dispatcher {
  return new Pool(origin, {
    connections: limits.connections,
    connectTimeout: limits.connectTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    bodyTimeout: limits.bodyTimeoutMs,
    keepAliveTimeout: 4_000,
    pipelining: 1,
  });
}

/**
 * 7. Relays the answer of the call's chosen upstream (status, passed headers, body) into `res` as it
 * arrives, with backpressure (response-relay.ts). Past `maxBytes` the upstream request is aborted and, once
 * the status line is out, the client's connection cut. A callback, not a promise: the data plane's hot path.
 */
export function relayAnswer(
  call: UpstreamCall,
  res: ServerResponse,
  note: UpstreamFields,
  done: RelayDone,
): void {
  new RelayRun(call, res, note, done).start();
}

class RelayRun extends CallRun<ServerResponse> implements AnswerReader {
  readonly #done: RelayDone;
  /** A call whose answers show a height: the run reads the answer once it went out. */
  readonly #reads: boolean;

  constructor(call: UpstreamCall, res: ServerResponse, note: UpstreamFields, done: RelayDone) {
    super(call, res, note);
    this.#done = done;
    // a call that makes a filter is read too: the node that answered it is the one its polls must reach;
    // and a write, for whether the node took it
    this.#reads = showsHeight(call) || call.handleOwner !== undefined || call.write;
  }

  protected attempt(upstream: Upstream): AttemptHandler {
    return new ResponseRelay(upstream, this.res, this, this.call.stream, this.#reads ? this : undefined);
  }

  /**
   * The answer going out, for the heights it shows (src/answers/examined.ts); it goes once a head rise on
   * its way to the other instances reached them (served-head.ts `sharing`).
   */
  read(upstream: Upstream, statusCode: number, body: Buffer): Promise<void> | undefined {
    this.judgeWrite(statusCode, body);
    if (statusCode !== 200) return undefined;
    const text = body.toString("utf8");
    learnHeights(this.call, upstream, text);
    if (this.call.handleOwner !== undefined) handleMadeBy(this.call, this.call.handleOwner, upstream, text);
    return this.call.group.served.sharing;
  }

  protected finished(error?: GatewayError): void {
    const { res } = this;
    if (error === undefined || !res.headersSent) {
      this.#done(error);
      return;
    }
    // The status line is gone: all that is left is to cut the connection.
    const gone = clientGone(res);
    res.destroy();
    this.#done(gone ? new GatewayError("CLIENT_CLOSED") : error);
  }
}

/** The state a call made on `upstream`, named by its answer's result, which its uses must reach there. */
function handleMadeBy(call: UpstreamCall, owner: string, upstream: Upstream, text: string): void {
  try {
    if (!text.trimStart().startsWith("[")) {
      const answer = JSON.parse(text) as { result?: unknown };
      if (typeof answer.result === "string")
        call.group.states.made(owner, answer.result, upstream, filterSpan(call.reads?.ranges[0]));
      return;
    }
    // in a batch, the answers to the calls that made filters, by their ids as written (one past 2^53
    // keeps its digits)
    const makers = new Map((call.reads?.handleMakers ?? []).map((id) => [idKey(id), id]));
    for (const one of scanMembers(text)) {
      const result = one.get("result");
      const id = makers.get(idKey(one.get("id")));
      if (result?.startsWith('"') && id !== undefined)
        call.group.states.made(
          owner,
          JSON.parse(result) as string,
          upstream,
          filterSpan(call.reads?.makerRanges.get(id)),
        );
    }
  } catch {
    // not one answer: nothing to remember
  }
}

/** 7, for an answer the gateway must change before it goes out (a partial batch): read whole, up to the cap. */
export function fetchWhole(
  call: UpstreamCall,
  res: CallerSide,
  note: UpstreamFields,
  callback: (error: GatewayError | undefined, answer?: WholeAnswer) => void,
): void {
  new WholeRun(call, res, note, callback).start();
}

class WholeRun extends CallRun {
  readonly #callback: (error: GatewayError | undefined, answer?: WholeAnswer) => void;
  #taken: BufferedAnswer | undefined = undefined;

  constructor(
    call: UpstreamCall,
    res: CallerSide,
    note: UpstreamFields,
    callback: (error: GatewayError | undefined, answer?: WholeAnswer) => void,
  ) {
    super(call, res, note);
    this.#callback = callback;
  }

  protected attempt(upstream: Upstream): AttemptHandler {
    return new BufferedAnswer(upstream, this.res, this);
  }

  override answered(attempt: AttemptHandler, statusCode: number): boolean {
    const taken = super.answered(attempt, statusCode);
    if (taken) this.#taken = attempt as BufferedAnswer;
    return taken;
  }

  override answeredWhole(attempt: AttemptHandler, statusCode: number, body: Buffer): boolean {
    const taken = super.answeredWhole(attempt, statusCode, body);
    if (taken) this.#taken = attempt as BufferedAnswer;
    return taken;
  }

  protected finished(failure?: GatewayError): void {
    let error = failure;
    let answer = error === undefined ? this.#taken?.answer : undefined;
    if (answer !== undefined && nestsTooDeep(answer.body)) {
      error = new GatewayError("UPSTREAM_BAD_RESPONSE", {
        reason: `the node's answer nests deeper than ${MAX_ANSWER_DEPTH} arrays and objects`,
      });
      answer = undefined;
    }
    // the first answer to a write, whichever way it is relayed (a partial batch, by hash, by tier)
    if (answer !== undefined) this.judgeWrite(answer.statusCode, answer.body);
    // a call read whole (a partial batch, a read by hash or by tier) may make a filter too
    const owner = this.call.handleOwner;
    if (answer !== undefined && answer.statusCode === 200 && owner !== undefined)
      handleMadeBy(this.call, owner, answer.upstream, answer.body.toString("utf8"));
    this.#callback(error, answer);
  }
}

/**
 * The deepest node answer the gateway reads whole. What reads one walks it, recursively (JSON.stringify of
 * a node's error in archive.ts and by-hash.ts, of a split range's lists in range-split.ts), and that
 * throws RangeError past about 4,000 levels on Node's default stack. The deepest real answer is an EVM
 * call trace: 1,024 nested calls, two levels each. Deeper is a broken answer, UPSTREAM_BAD_RESPONSE.
 */
export const MAX_ANSWER_DEPTH = 3_000;

/** Whether a JSON answer nests past MAX_ANSWER_DEPTH; a body too short to, or not JSON (REST bytes), does not. */
function nestsTooDeep(body: Buffer): boolean {
  if (body.length <= MAX_ANSWER_DEPTH) return false;
  const first = body.subarray(0, 64).toString("latin1").trimStart().charCodeAt(0);
  if (first !== OPEN_ARRAY && first !== OPEN_OBJECT) return false;
  return nestsDeeperThan(body.toString("utf8"), MAX_ANSWER_DEPTH);
}

/**
 * An opened socket's error, before its user has listened for errors (an error with no listener would be
 * thrown): its user learns of the failure from the close that follows.
 */
function afterOpen(): void {}

/**
 * The upstream socket of a WebSocket connection, opened before the client's handshake completes, on the
 * group's chosen upstream. A socket that does not open has carried no call, so the next upstream is tried
 * whatever the failure, while the client still waits (`wanted`). Within `handshakeTimeoutMs` per node: a
 * deadline of the gateway's own, classified like any other failure (failure.ts).
 */

export function openWebSocket(
  group: UpstreamGroup,
  limits: Limits,
  wanted: () => boolean,
  callback: (error: GatewayError | undefined, socket?: WebSocket, upstream?: Upstream) => void,
  headers: Readonly<Record<string, string>> = {},
  besides?: Upstream,
): void {
  const nodes = nodesForSocket(
    group,
    limits,
    wanted,
    callback,
    () => openWebSocket(group, limits, wanted, callback, headers, besides),
    besides,
  );
  if (nodes === undefined) return;
  // at most MAX_ATTEMPTS nodes in rotation, then the lagging ones (group.ts forConnection), as many again:
  // a label whose nodes in rotation all refuse sockets still reaches one a few blocks behind
  const order = [
    ...nodes.filter((node) => node.health.inRotation).slice(0, MAX_ATTEMPTS),
    ...nodes.filter((node) => !node.health.inRotation).slice(0, MAX_ATTEMPTS),
  ];
  const attempts = order.length;
  let tried = 0;
  const next = (): void => {
    const upstream = order[tried++] as Upstream;
    const socket = new WebSocket(upstream.wsUrl, {
      perMessageDeflate: false,
      // an answer over the cap is read and refused by its id (ws/connection.ts): only a message past four
      // times the cap closes the node's socket (1009), and with it the connection's other calls
      maxPayload: limits.upstream.maxResponseBytes * OVERSIZE_READ,
      // the upgrade's id and trace (pipeline/admitted.ts nodeHeaders), then the node's own headers
      headers: { ...headers, ...upstream.headers },
    });
    const deadline = setTimeout(() => {
      failed(deadlineError(`the WebSocket did not open within ${limits.ws.handshakeTimeoutMs} ms`));
    }, limits.ws.handshakeTimeoutMs);
    let settled = false;
    const failed = (error: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      socket.terminate();
      // A node that answered the handshake with an HTTP status (a 404 from a server with no WebSocket)
      // is up: only a connection that failed or timed out says something of its health.
      const kind = failureKind(error);
      if (kind !== undefined) upstream.health.failed(kind, describeFailure(error));
      if (tried < attempts && wanted()) {
        next();
        return;
      }
      callback(
        new GatewayError(kind === "timeout" ? "UPSTREAM_TIMEOUT" : "NO_UPSTREAM", {
          reason: "the upstream WebSocket did not open",
        }),
      );
    };
    socket.once("open", () => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      // `failed` would stay on the socket for its whole life, and with it this opener's callback and what
      // that holds (a WebSocket upgrade's request): a listener of no closure takes its place
      socket.off("error", failed).on("error", afterOpen);
      callback(undefined, socket, upstream);
    });
    socket.once("error", failed);
  };
  next();
}

/** How far past `maxResponseBytes` a node's socket reads a message, to refuse it by its id. */
const OVERSIZE_READ = 4;

/**
 * The group's nodes in its order of choice for a new connection (group.ts `forConnection`); undefined when there is none, and then
 * `callback` has been told NO_UPSTREAM, or `again` runs once the prober has checked the nodes it has not
 * yet (a label's first connections after a start), while the client still waits (`wanted`).
 */
export function nodesForSocket<Socket>(
  group: UpstreamGroup,
  limits: Limits,
  wanted: () => boolean,
  callback: (error: GatewayError | undefined, socket?: Socket, upstream?: Upstream) => void,
  again: () => void,
  besides?: Upstream,
): readonly Upstream[] | undefined {
  // a move the gateway chose leaves the connection's node for another: never back onto it (its socket
  // would open, and be closed unused, at each probe round)
  const order = group.forConnection().filter((node) => node !== besides);
  if (order.length > 0) return order;
  if (group.checking && wanted()) group.whenChecked(limits.ws.handshakeTimeoutMs, again);
  else callback(new GatewayError("NO_UPSTREAM", { reason: group.whyNone(false) }));
  return undefined;
}
