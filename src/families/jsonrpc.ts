import type { IncomingMessage } from "node:http";
import { batchOf } from "../answers/batch-answers.js";
import { type ReadNeed, readNeed } from "../answers/read-need.js";
import { ERRORS, GatewayError, type RpcErrorCode } from "../errors/table.js";
import { requestMediaType } from "../http/body.js";
import { batchMethods } from "../jsonrpc/batch-methods.js";
import { callRulesOf } from "../jsonrpc/call-rules.js";
import {
  type CallRules,
  type Checked,
  isLegacyCall,
  type PassedCall,
  sendableAsReceived,
} from "../jsonrpc/check.js";
import { batchLayout, refusalsOf } from "../jsonrpc/merge.js";
import { checkMessage } from "../jsonrpc/message.js";
import type { Mounted } from "../pipeline/stages.js";
import { batchParts, callsUnits } from "../plans/compute-units.js";
import type { HeadCall, JsonRpcPolicy } from "../registry/types.js";
import type { Authorized, Family, FamilySettings, Outgoing, RoutedRequest } from "./family.js";
import { type CallAuthorizer, RestShapedCall, restShapedMethod } from "./rest-shaped.js";

const UPSTREAM_HEADERS = ["content-type", "application/json", "accept", "application/json"] as const;

/**
 * The JSON-RPC family: a POST of one call or a batch to the mount's root. Every call is checked against
 * the dialect's envelope and allow-list; what passed goes upstream, and what did not is answered by the
 * gateway (within a batch, merged into the node's answer).
 */
export function jsonRpcFamily(settings: FamilySettings): Family {
  return {
    style: "jsonrpc",
    route: (req, mounted) => routeJsonRpc(req, mounted, settings),
  };
}

/** The JSON-RPC half of a family: also what a mixed mount's root goes through. */
export function routeJsonRpc(
  req: IncomingMessage,
  mounted: Mounted,
  settings: FamilySettings,
): RoutedRequest {
  const policy = mounted.mount.policy.jsonrpc;
  if (policy === undefined) throw new GatewayError("NOT_FOUND");
  // below the mount, only a path where the node's own server takes the same calls (registry jsonRpcPaths)
  const below = mounted.segments.length > 0;
  const shaped = below ? restShapedMethod(policy, mounted.segments) : undefined;
  if (below && shaped === undefined && policy.paths?.has(`/${mounted.segments.join("/")}`) !== true)
    throw new GatewayError("NOT_FOUND");
  if (req.method !== "POST" && shaped === undefined)
    throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow: ["POST"] }, { allow: "POST" });
  const rules = callRulesOf(mounted, "http", settings.support, callRefusalOf(mounted, settings));
  const request = new JsonRpcRequest(req, rules, settings, mounted, below ? mounted.mount.path : undefined);
  return shaped === undefined ? request : new RestShapedCall(req, mounted, shaped, request);
}

class JsonRpcRequest implements RoutedRequest, CallAuthorizer {
  readonly family = "jsonrpc";
  readonly readsBody = true;
  readonly #req: IncomingMessage;
  readonly #rules: CallRules;
  readonly #settings: FamilySettings;
  readonly #writes: ReadonlySet<string>;
  readonly #head: HeadCall;
  readonly #mounted: Mounted;
  /** Where the node gets the calls when not at the caller's path: the mount's own, for a jsonRpcPaths one. */
  readonly #upstreamPath: string | undefined;

  constructor(
    req: IncomingMessage,
    rules: CallRules,
    settings: FamilySettings,
    mounted: Mounted,
    upstreamPath: string | undefined,
  ) {
    this.#upstreamPath = upstreamPath;
    this.#req = req;
    this.#rules = rules;
    this.#settings = settings;
    this.#writes = rules.policy.writes;
    this.#head = mounted.mount.head;
    this.#mounted = mounted;
  }

  #post(
    body: string | Buffer,
    write: boolean,
    reads: ReadNeed | undefined,
    passed: readonly PassedCall[],
    single?: PassedCall,
    batch?: readonly PassedCall[],
  ): Outgoing {
    const path = this.#upstreamPath;
    const heldMs = this.#heldMs(passed);
    const writeIds =
      write && single === undefined
        ? passed.flatMap((call) => (this.#writes.has(call.method) && call.id !== undefined ? [call.id] : []))
        : undefined;
    return {
      method: "POST",
      headers: UPSTREAM_HEADERS,
      body,
      stream: false,
      ...(heldMs > 0 ? { heldMs } : {}),
      write,
      writeIds,
      reads,
      single,
      batch,
      path,
    };
  }

  /** A message with a long poll in it (registry `longPolls`: nearcore's `tx` with `wait_until`) is held. */
  #heldMs(passed: readonly PassedCall[]): number {
    const longPolls = this.#mounted.mount.policy.longPolls;
    const methods = longPolls?.methods;
    if (methods === undefined) return 0;
    for (const call of passed) if (methods.has(call.method)) return longPolls?.heldMs ?? 0;
    return 0;
  }

  /** What the calls that passed cost in compute units. */
  #units(passed: readonly PassedCall[]): number {
    const { mount, admitted } = this.#mounted;
    return callsUnits(
      mount.policy.computeUnits,
      passed.map((call) => call.method),
      admitted.endpoint,
    );
  }

  /** What the calls that go upstream need of the node (src/answers/read-need.ts). */
  #reads(passed: readonly PassedCall[], single: boolean): ReadNeed | undefined {
    return readNeed(this.#rules.policy.reads, this.#head, passed, single);
  }

  authorize(body: Buffer): Authorized {
    checkMediaType(requestMediaType(this.#req), this.#rules.policy);
    return this.authorizeText(body.toString("utf8"), body);
  }

  /** The calls of `text` checked, charged and planned; `body` is its bytes when the caller sent them. */
  authorizeText(text: string, body: string | Buffer = text): Authorized {
    const { batch, checked, replyId, legacy } = checkMessage(text, this.#rules, this.#settings.limits);
    if (!batch) {
      // a body that is not a batch holds exactly one call
      const only = checked[0] as Checked;
      return {
        cost: 1,
        computeUnits: only.ok ? this.#units([only]) : 0,
        replyId,
        // a refused notification is answered as the node answers one it serves: with nothing (JSON-RPC 2.0 §4.1)
        answer: only.ok
          ? undefined
          : only.notification
            ? { status: this.#rules.policy.notificationStatus, body: "", code: only.code }
            : { status: ERRORS[only.code].status, body: only.json, code: only.code },
        outgoing: only.ok
          ? this.#post(
              sendableAsReceived(text, checked) ? body : only.json,
              this.#writes.has(only.method),
              this.#reads([only], true),
              [only],
              only,
            )
          : undefined,
        refusals: undefined,
        legacy,
        // a refused call's too, when it is one of the interface's methods (a plan's, a key's refusal)
        method: only.method,
        route: undefined,
        batch: undefined,
        refused: undefined,
      };
    }
    // one pass: the calls that go on, the refusals' answers (none for a notification, which is counted and
    // charged as refused but never answered), the first refusal's code, and whether a write is among them
    // (a batch with one write in it is a write: the node gets it once)
    const passed: PassedCall[] = [];
    const refusedCodes: string[] = [];
    let firstRefusal: RpcErrorCode | undefined;
    let write = false;
    for (const call of checked) {
      if (call.ok) {
        passed.push(call);
        if (this.#writes.has(call.method)) write = true;
      } else {
        refusedCodes.push(call.code);
        firstRefusal ??= call.code;
      }
    }
    // the refusals' answers, each in its call's place (none for a notification)
    const layout = refusedCodes.length === 0 ? [] : batchLayout(checked);
    const refused = refusalsOf(layout);
    // the calls that passed (as received when none was refused), which the cache may answer one by one;
    // the refusals join their answers
    const outgoing: Outgoing | undefined =
      passed.length === 0
        ? undefined
        : this.#post(
            sendableAsReceived(text, checked) ? body : batchOf(passed),
            write,
            this.#reads(passed, false),
            passed,
            undefined,
            passed,
          );
    return {
      cost: checked.length,
      computeUnits: this.#units(passed),
      replyId,
      // Inside a batch each call gets its own answer and the HTTP status is 200 (proxyd does the same).
      // Only notifications refused: nothing at all, as the node answers a batch of notifications (geth an
      // empty 200, bitcoind 204), never an empty array (JSON-RPC 2.0 §6)
      answer:
        passed.length === 0 && firstRefusal !== undefined
          ? refused.length > 0
            ? { status: 200, body: `[${refused.join(",")}]`, code: firstRefusal }
            : { status: this.#rules.policy.notificationStatus, body: "", code: firstRefusal }
          : undefined,
      outgoing,
      refusals: passed.length > 0 && refused.length > 0 ? layout : undefined,
      method: undefined,
      methods: batchMethods(checked),
      route: undefined,
      batch: checked.length,
      refused: refusedCodes.length,
      batchIds: passed.flatMap((call) => (call.id === undefined ? [] : [call.id])),
      // a dialect that answers 1.0 calls in 1.0's shape (bitcoind) does so call by call in a batch too
      batchLegacy: this.#rules.policy.legacyReplies
        ? passed.flatMap((call) => (call.id === undefined ? [] : [isLegacyCall(call.call)]))
        : undefined,
      batchRefusals: layout,
      refusedCodes,
      batchParts: batchParts(
        this.#mounted.mount.policy.computeUnits,
        passed.map((call) => call.method),
      ),
    };
  }
}

/**
 * A mount's call refusal, only where its dialect has range calls, filters or archive reads: no closure per
 * request elsewhere.
 */
function callRefusalOf(mounted: Mounted, settings: FamilySettings): CallRules["callRefusal"] {
  const refusal = settings.callRefusal;
  const reads = mounted.mount.policy.jsonrpc?.reads;
  if (
    refusal === undefined ||
    (reads?.ranges === undefined && reads?.handles === undefined && reads?.archive === undefined)
  )
    return undefined;
  return (call) => refusal(mounted, call);
}

/**
 * The media types the nodes read a JSON-RPC body under: geth's rpc package (and Erigon's, bsc's, coreth's)
 * takes all three (rpc/http.go acceptedContentTypes), jsonrpsee `application/json-rpc` too; Java's jsonrpc4j
 * sends `application/json-rpc`. The node gets the gateway's own `application/json` whichever came.
 */
const JSON_RPC_MEDIA = new Set(["application/json", "application/json-rpc", "application/jsonrequest"]);

function checkMediaType(media: string | undefined, policy: JsonRpcPolicy): void {
  if (media !== undefined && JSON_RPC_MEDIA.has(media)) return;
  // bitcoind reads the body whatever it is called: curl's -d sends a form type, bitcoin-cli none
  if (policy.plainTextBody) return;
  throw new GatewayError("UNSUPPORTED_MEDIA_TYPE");
}
