import type { IncomingMessage, ServerResponse } from "node:http";
import type { Limits } from "../config/types.js";
import {
  type ErrorStyle,
  endpointStyle,
  isRest,
  jsonRpcStyle,
  preflight,
  restStyle,
  sendJson,
} from "../errors/respond.js";
import { ERRORS, type ErrorCode, GatewayError } from "../errors/table.js";
import type { Authorized, RoutedRequest } from "../families/family.js";
import { collectBody, expectsContinue } from "../http/body.js";
import { checkFraming } from "../http/framing.js";
import { type AnswerTag, requestIdFor, tagResponse } from "../http/request-id.js";
import { replyIn } from "../jsonrpc/check.js";
import { TokenLifetime } from "../keys/token-lifetime.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { HeldCalls } from "../limits/held-calls.js";
import { AccessLine, type Logger } from "../log.js";
import { type GatewayMetrics, type MethodClass, resultOf } from "../metrics/gateway-metrics.js";
import { type BatchPart, withoutCalls } from "../plans/compute-units.js";
import type { QuotaHold } from "../plans/quota-hold.js";
import type { ComputeUnits, Endpoint } from "../registry/types.js";
import { callerTraceParent } from "../tracing/trace-parent.js";
import type { RequestTrace, Tracing } from "../tracing/tracing.js";
import { isHeld } from "../upstream/call-run.js";
import type { UpstreamCall } from "../upstream/policy.js";
import type { ErrorBoundary } from "./boundary.js";
import { ADMISSION_REFUSALS, answerFailure } from "./exchange-failure.js";
import { pricedParts, unitsServed } from "./exchange-units.js";
import { relay } from "./relay.js";
import type { Charged, Mounted, Stages } from "./stages.js";

const NO_BODY = Buffer.alloc(0);

/** What every HTTP exchange of one served config shares (proxy/served-config.ts). */
export interface HttpContext {
  readonly limits: Limits;
  readonly logger: Logger;
  readonly logAccess: boolean;
  readonly metrics: GatewayMetrics | undefined;
  readonly usage: UsageRecorder | undefined;
  /**
   * Requests begun and not ended, which a graceful close or a reload's retiring config waits for; `cut`
   * once a stop's drain deadline passed and the server cuts what is left (DRAIN_CUT, not the caller's leaving).
   */
  readonly inFlight: { count: number; cut?: boolean };
  /** Each caller's streams and long polls held at once (limits/held-calls.ts). */
  readonly held: HeldCalls;
  /** Where an unexpected error becomes a logged INTERNAL answer. */
  readonly boundary: ErrorBoundary;
  /** The traces' exporter and sampler; undefined with tracing off. */
  readonly tracing: Tracing | undefined;
}

/**
 * The HTTP transport of the pipeline (stages.ts): one request, from Host to access-log line. It runs the
 * stages in order, reads the body between the two halves of stage 4, and ends the request one way,
 * whichever stage it ends in. Callbacks rather than an async function per stage: each await and promise
 * showed in the profile of this path.
 */
export class HttpExchange implements AnswerTag {
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #stages: Stages;
  readonly #limits: Limits;
  readonly #logger: Logger;
  readonly #boundary: ErrorBoundary;
  readonly #logAccess: boolean;
  readonly #metrics: GatewayMetrics | undefined;
  readonly #usage: UsageRecorder | undefined;
  readonly #inFlight: { count: number; cut?: boolean };
  readonly #held: HeldCalls;
  /** The caller whose held call (a stream, a long poll) this is, once it holds one of its slots. */
  #heldBy: string | undefined = undefined;
  /**
   * Ends the held call: its key was withdrawn or its settings changed (limits/held-calls.ts `cut`). The
   * connection is cut, as a WebSocket's is closed, and the relay ends with the node's request. Made for a
   * held call only: a closure per request showed in the profile (docs/performance.md).
   */
  #cut: (() => void) | undefined = undefined;
  /** Why a held call was cut: its key withdrawn, or the JWT it was made with expired. */
  #cutAs: "KEY_WITHDRAWN" | "JWT_REQUIRED" | undefined = undefined;
  /** A held call made with a JWT lasts as long as the token does, as a WebSocket's connection does. */
  #token: TokenLifetime | undefined = undefined;
  readonly #tracing: Tracing | undefined;
  /** The request's span, from the moment its label is known; undefined with tracing off. */
  #trace: RequestTrace | undefined = undefined;
  /** Calls in the request (a batch of n is n), and how many of them the gateway refused. */
  #calls = 1;
  #refusedCalls = 0;
  /** The codes of a batch's calls refused on their own. */
  #refusedCodes: readonly string[] | undefined = undefined;
  #batchParts: readonly BatchPart[] | undefined = undefined;
  readonly #started = performance.now();
  readonly #access = new AccessLine();
  /** What the metrics count the request as: its family and method or route, as far as it got. */
  #family = "none";
  /** Stage 1's endpoint, for a refusal before the body (its dialect's shape). */
  #endpoint: Endpoint | undefined = undefined;
  #metricMethod = "other";
  /** The kind of call, once its upstream call is planned: the duration histogram's `class`. */
  #methodClass: MethodClass = "none";
  #requestBytes = 0;
  /** The calls' compute units (stage 4), and the rules that price an archive node's answer. */
  #computeUnits = 0;
  #unitRules: ComputeUnits | undefined = undefined;
  /** The endpoint, whose compute-unit multiplier a batch's archived or refused calls are priced with. */
  #unitEndpoint: Endpoint | undefined = undefined;
  /** What an answer from the cache costs, as a share of its price (the plan's `cachedShare`). */
  #cachedShare = 1;
  #archiveEndpoint = false;
  /** The compute units reserved against the key's quota (stage 5), settled at the end. */
  #quota: QuotaHold | undefined = undefined;
  /** A JSON-RPC batch once read: its refusals, and the ids of its calls that passed (Authorized.batchIds). */
  #batch: Authorized | undefined = undefined;
  /** The socket's bytes written before this request's answer (a keep-alive socket carries many). */
  readonly #writtenBefore: number;
  /**
   * The largest body it reads: the deployment's, or its network's blob transactions' when larger (registry
   * `blobsPerTransaction`).
   */
  #bodyLimit: number;
  /** How a refusal is written: REST-style until the endpoint and then its mount say otherwise. */
  #style: ErrorStyle = "rest";
  #ended = false;
  /** The caller's X-Request-Id, or one made for it: on the answer, its error, the log line and the node's request. */
  readonly #requestId: string;

  constructor(req: IncomingMessage, res: ServerResponse, stages: Stages, options: HttpContext) {
    this.#req = req;
    this.#res = res;
    this.#stages = stages;
    this.#limits = options.limits;
    this.#bodyLimit = options.limits.maxBodyBytes;
    this.#logger = options.logger;
    this.#boundary = options.boundary;
    this.#logAccess = options.logAccess;
    this.#metrics = options.metrics;
    this.#usage = options.usage;
    this.#inFlight = options.inFlight;
    this.#held = options.held;
    this.#tracing = options.tracing;
    this.#inFlight.count += 1;
    this.#requestId = requestIdFor(req.rawHeaders, req.url ?? "");
    // the exchange is its answer's tag: its id and its price, with nothing made per request for them
    tagResponse(res, this);
    this.#access.requestId = this.#requestId;
    this.#writtenBefore = this.#metrics === undefined ? 0 : req.socket.bytesWritten;
  }

  /** Stages 1 to 4's first half, then the body if the family reads one. */
  run(): void {
    const req = this.#req;
    try {
      const resolved = this.#stages.resolveEndpoint(req); // 1
      this.#endpoint = resolved.endpoint;
      this.#access.label = resolved.endpoint.label;
      const { bodyBytes } = resolved.endpoint;
      if (bodyBytes !== undefined && bodyBytes > this.#bodyLimit) this.#bodyLimit = bodyBytes;
      if (this.#tracing !== undefined) this.#traceFrom(resolved.endpoint.label);
      this.#family = resolved.endpoint.family;
      this.#style = endpointStyle(resolved.endpoint, req.url);
      checkFraming(req);
      if (req.method === "OPTIONS") {
        preflight(this.#res, req.headers["access-control-request-headers"]);
        this.#end();
        return;
      }
      const admitted = this.#stages.admitCaller(resolved, req, this.#requestId, this.#trace); // 2
      this.#access.key = admitted.principal?.keyId;
      const mounted = this.#stages.pickMount(admitted); // 3
      this.#style =
        mounted.family.style === "rest"
          ? restStyle(mounted.mount.policy)
          : jsonRpcStyle(mounted.mount.policy.jsonrpc);
      const routed = mounted.family.route(req, mounted); // 4, from the request's head
      this.#family = routed.family;
      if (!routed.readsBody) {
        this.#authorize(mounted, routed, NO_BODY);
        return;
      }
      collectBody(
        req,
        this.#bodyLimit,
        (error, body) => {
          if (error !== undefined) this.#end(error);
          else this.#authorize(mounted, routed, body);
        },
        this.#res,
        // a REST route's body, or one of a dialect without batches, is no batch to split
        mounted.mount.policy.jsonrpc?.batch === true,
      );
    } catch (error) {
      if (req.method === "OPTIONS" && error instanceof GatewayError && error.code === "UNKNOWN_NETWORK") {
        this.#preflightAnyway();
        return;
      }
      const beforeBody =
        !isRest(this.#style) &&
        req.method === "POST" &&
        error instanceof GatewayError &&
        ADMISSION_REFUSALS.has(error.code) &&
        // a valid key's: one refused at admission names it, one admitted is the access line's
        (error.keyId !== undefined || this.#access.key !== undefined);
      if (beforeBody) this.#refuseWithCallId(error);
      else this.#end(error);
    }
  }

  /**
   * A preflight to a host that names no network is granted as any other is: refused, it left the page a
   * bare "Failed to fetch", where its call itself gets UNKNOWN_NETWORK with the headers that let the page
   * read why. A malformed Host or framing is still refused (RFC 9112 §3.2).
   */
  #preflightAnyway(): void {
    try {
      checkFraming(this.#req);
      preflight(this.#res, this.#req.headers["access-control-request-headers"]);
      this.#end();
    } catch (error) {
      this.#end(error);
    }
  }

  /**
   * A valid key refused before its body was read (its network, its origin or address, its JWT) is answered
   * with its call's own id, as every other refusal is: the body is read for it, nothing more.
   */
  #refuseWithCallId(error: GatewayError): void {
    // a client waiting for 100 Continue sends no body for a refused request: the refusal is its answer
    if (expectsContinue(this.#req)) {
      this.#end(error);
      return;
    }
    collectBody(this.#req, this.#bodyLimit, (tooLarge, body) => {
      if (tooLarge !== undefined) return this.#end(tooLarge, "null");
      const reply = replyIn(body, this.#limits.maxJsonDepth);
      // a 1.0 call (bitcoin-cli's, python-bitcoinrpc's) gets its refusal in 1.0's shape, as after its body
      if (reply.legacy && this.#endpoint?.mounts.some((m) => m.policy.jsonrpc?.legacyReplies === true))
        this.#style = "jsonrpc-1.0";
      this.#end(error, reply.id);
    });
  }

  /** The request's span, begun when the request arrived, under the caller's trace when it sent one. */
  #traceFrom(label: string): void {
    const parent = callerTraceParent(this.#req.rawHeaders);
    this.#trace = this.#tracing?.request(label, "http", this.#requestId, parent, this.#started);
  }

  /** Stage 4's second half and 5; then 6 and 7, once a quota that asked Redis has its answer. */
  #authorize(mounted: Mounted, routed: RoutedRequest, body: Buffer): void {
    let replyId = "null";
    try {
      this.#requestBytes = body.length;
      const authorized = routed.authorize(body); // 4
      replyId = authorized.replyId;
      // a 1.0 call's later refusals (its rate, its quota, no node) in 1.0's shape, as bitcoind answers it
      if (authorized.legacy === true) this.#style = "jsonrpc-1.0";
      if (authorized.batchIds !== undefined) this.#batch = authorized;
      this.#note(authorized);
      this.#unitRules = mounted.mount.policy.computeUnits;
      this.#unitEndpoint = mounted.admitted.endpoint;
      this.#cachedShare = mounted.admitted.plan?.cachedShare ?? 1;
      this.#archiveEndpoint = mounted.admitted.endpoint.nodeClass === "archive";
      // what it will cost as planned: a split range's parts, a read the archive tier answers at once
      const units = this.#stages.plannedUnits(mounted, authorized.outgoing, authorized.computeUnits);
      const priced = units === authorized.computeUnits ? authorized : { ...authorized, computeUnits: units };
      const charged = this.#stages.chargeRate(mounted, priced); // 5
      if (authorized.outgoing === undefined) {
        const answer = authorized.answer;
        // a bug, which the boundary logs with its stack
        if (answer === undefined) throw new Error("a request authorized with neither an answer nor a call");
        sendJson(this.#res, answer.status, answer.body);
        // The gateway's refusal, as the caller's JSON-RPC error objects carry it, for the log and metrics.
        this.#access.error = answer.code;
        this.#end();
        return;
      }
      const quotaUnits = this.#stages.quotaUnits(mounted, authorized.outgoing, units);
      const held = this.#stages.holdQuota(mounted, charged, quotaUnits); // 5, the quota
      // where the filters it polls are, when another instance saw them made
      const recalled = this.#stages.recallHandles(mounted, charged);
      if (held instanceof Promise || recalled !== undefined)
        Promise.all([held, recalled]).then(
          ([hold]) => this.#relay(mounted, authorized, charged, hold, replyId),
          (error) => this.#end(error, replyId),
        );
      else this.#relay(mounted, authorized, charged, held, replyId);
    } catch (error) {
      this.#end(error, replyId);
    }
  }

  /** 6 and 7. */
  #relay(
    mounted: Mounted,
    authorized: Authorized,
    charged: Charged<Authorized>,
    hold: QuotaHold | undefined,
    replyId: string,
  ): void {
    this.#quota = hold;
    try {
      const call = this.#stages.planUpstream(mounted, charged); // 6
      this.#methodClass = classOf(call, authorized);
      // A stream stays open while the node pushes, a long poll while it waits: one caller holds a few at
      // once, and the socket's idle timeout must not cut them (the call's own deadline bounds a long poll).
      if (isHeld(call)) {
        this.#cut = () => {
          this.#cutAs ??= "KEY_WITHDRAWN";
          this.#res.destroy();
        };
        this.#held.take(mounted.admitted.clientId, this.#cut);
        this.#heldBy = mounted.admitted.clientId;
        const validUntil = mounted.admitted.tokenValidUntilMs;
        if (validUntil !== undefined)
          this.#token = new TokenLifetime(validUntil, () => {
            this.#cutAs = "JWT_REQUIRED";
            this.#cut?.();
          });
        this.#req.socket.setTimeout(0);
      }
      // 7: a partial batch's answer is read whole and merged, a range too wide for one node is split,
      // and any other answer streams through
      const done = (error?: unknown) => {
        // what a caller wrote may change what it reads next at the head: those answers are not kept past
        // it; a write the node refused changed nothing
        if (call.write && this.#access.refusedWrite !== true) call.group.wrote(mounted.admitted);
        this.#end(error, replyId);
      };
      relay(call, authorized.refusals, this.#res, this.#access, done);
    } catch (error) {
      this.#end(error, replyId);
    }
  }

  #note(authorized: Authorized): void {
    const access = this.#access;
    access.method = authorized.method;
    access.route = authorized.route;
    access.batch = authorized.batch;
    access.methods = authorized.methods;
    access.refused = authorized.refused;
    this.#metricMethod =
      authorized.batch !== undefined ? "batch" : (authorized.route ?? authorized.method ?? "other");
    this.#calls = authorized.cost;
    this.#refusedCalls = authorized.refused ?? 0;
    this.#refusedCodes = authorized.refusedCodes;
    this.#batchParts = authorized.batchParts;
    this.#computeUnits = authorized.computeUnits;
  }

  /** The request's id (X-Request-Id), for its answer's head (http/request-id.ts AnswerTag). */
  get id(): string {
    return this.#requestId;
  }

  /** What the answer written now with `status` costs: its X-Compute-Units, which #end counts. */
  units(status: number): number {
    const access = this.#access;
    return this.#unitsServed(resultOf(access.error as ErrorCode | undefined, status, access.nodesAnswer));
  }

  /** What the request cost in compute units (exchange-units.ts), from its notes so far. */
  #unitsServed(result: string): number {
    return unitsServed(
      result,
      this.#access,
      this.#computeUnits,
      this.#batchParts,
      this.#unitRules,
      this.#unitEndpoint,
      this.#archiveEndpoint,
      this.#cachedShare,
    );
  }

  /**
   * Ends the request once, whichever way it ends. A second call can only be a throw after the relay
   * called back: the answer is settled by then, so a bug's error is logged and nothing else is done.
   */
  #end(error?: unknown, replyId = "null"): void {
    if (this.#ended) {
      if (error !== undefined) this.#caught(error);
      return;
    }
    this.#ended = true;
    this.#inFlight.count -= 1;
    if (this.#heldBy !== undefined) this.#held.release(this.#heldBy, this.#cut);
    this.#token?.stop();
    if (error !== undefined) this.#fail(error, replyId);
    const access = this.#access;
    const elapsed = performance.now() - this.#started;
    // a caller that left is nginx's 499; one the stop cut is the gateway's own failure (docs/errors.md)
    access.status = this.#res.headersSent
      ? this.#res.statusCode
      : access.error === "DRAIN_CUT" || access.error === "KEY_WITHDRAWN"
        ? ERRORS[access.error].status
        : 499;
    access.ms = Math.round(elapsed);
    const code = access.error as ErrorCode | undefined;
    // a node's own error at its error status is its answer, served as one at 200 is (docs/compute-units.md)
    const result = resultOf(code, access.status, access.nodesAnswer);
    // a batch the gateway refused as a whole (its rate, its quota, its burst) had every call refused
    if (result === "client" && access.batch !== undefined) access.refused = access.batch;
    // what the answer's X-Compute-Units said, from the same notes
    const computeUnits = this.#unitsServed(result);
    const required = access.requiredMethods;
    if (required !== undefined) {
      // a batch's calls refused as needing an archive node, or that the archive nodes could not serve:
      // refusals, not calls of their methods, each under its code
      const code = access.requiredCode ?? "ARCHIVE_REQUIRED";
      this.#refusedCalls += required.length;
      this.#refusedCodes = [...(this.#refusedCodes ?? []), ...required.map(() => code)];
      if (this.#batchParts !== undefined) this.#batchParts = withoutCalls(this.#batchParts, required);
    }
    if (computeUnits > 0) access.cu = computeUnits;
    this.#quota?.settle(computeUnits);
    // a key refused at admission (its network, its settings) counts the refusal in its own usage
    if (access.key === undefined && error instanceof GatewayError) access.key = error.keyId;
    if (this.#usage !== undefined && access.key !== undefined && access.label !== undefined) {
      // A call the gateway or the node failed is an error; one whose caller left is not either side's.
      const failed = result !== "ok" && result !== "client_closed";
      this.#usage.record(
        access.key,
        access.label,
        this.#calls,
        failed ? this.#calls : this.#refusedCalls,
        computeUnits,
        {
          method: this.#metricMethod,
          parts: pricedParts(this.#batchParts, access, this.#cachedShare),
          code,
          ms: elapsed,
          refusedCodes: this.#refusedCodes,
        },
        // the day its quota spent it in, when it held any
        this.#quota?.heldAt,
      );
    }
    this.#metrics?.request({
      label: access.label ?? "none",
      family: this.#family,
      method: this.#metricMethod,
      code,
      status: access.status,
      nodesAnswer: access.nodesAnswer,
      seconds: elapsed / 1000,
      upstream: access.answeredBy,
      upstreamSeconds: access.upstreamMs === undefined ? undefined : access.upstreamMs / 1000,
      requestBytes: this.#requestBytes,
      responseBytes: this.#req.socket.bytesWritten - this.#writtenBefore,
      keyed: access.key !== undefined,
      computeUnits,
      methodClass: this.#methodClass,
    });
    this.#trace?.end({
      family: this.#family,
      method: this.#metricMethod,
      methodClass: this.#methodClass,
      result,
      code,
      status: access.status,
      upstream: access.answeredBy,
      cache: access.cache,
      tier: access.tier,
      computeUnits,
    });
    // A request a node or the gateway failed is a warning, written even with the access log off: its
    // line names the error code and the upstream (by name, never its credentials), and never the key.
    const failed = result === "upstream" || result === "gateway";
    if (failed) this.#logger.log("warn", "request", access);
    else if (this.#logAccess) this.#logger.log("info", "request", access);
  }

  /** Who ended a request whose connection closed: the stop, a key's withdrawal, or its caller. */
  #cutBy(): ErrorCode {
    if (this.#inFlight.cut === true) return "DRAIN_CUT";
    return this.#cutAs ?? "CLIENT_CLOSED";
  }

  #fail(failure: unknown, replyId: string): void {
    const error = this.#caught(failure);
    const cutBy = this.#cutBy();
    answerFailure(
      error,
      replyId,
      this.#req,
      this.#res,
      this.#access,
      cutBy,
      this.#bodyLimit,
      this.#batch,
      this.#style,
    );
  }

  #caught(error: unknown): GatewayError {
    const { label, upstream } = this.#access;
    return this.#boundary.caught(error, "http request", { label, upstream, requestId: this.#requestId });
  }
}

/** The kind of call a planned upstream call is, for the duration histogram (a bounded set). */
function classOf(call: UpstreamCall, authorized: Authorized): MethodClass {
  if (call.write) return "write";
  if (call.stream) return "stream";
  if (call.heldMs > 0) return "wait";
  if (authorized.batch !== undefined) return "batch";
  return call.reads !== undefined && call.reads.ranges.length > 0 ? "range" : "read";
}
