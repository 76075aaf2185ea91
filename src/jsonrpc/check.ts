import { paramAt } from "../answers/block-params.js";
import type { GatewayConfig } from "../config/types.js";
import { dedicatedPointer } from "../errors/dedicated-pointer.js";
import { errorFormOf, rpcErrorJson } from "../errors/respond.js";
import type { RpcErrorCode } from "../errors/table.js";
import type { KeyRules } from "../keys/key-settings.js";
import { KEY_PREFIX, withoutKeys } from "../keys/types.js";
import type { PlanTerms } from "../plans/plan-terms.js";
import type { JsonRpcPolicy, MethodAccess, StateDumpRule } from "../registry/types.js";
import { memberInAnotherCase, refusalOf } from "./member-case.js";
import { parseJsonRpcBody, type RawCall } from "./scan.js";

/**
 * A call checked: passed, or refused with its answer (and its method when the interface has it: the log and
 * metrics name it). A refused notification is counted and charged as any refused call, but its answer is
 * never sent: "The Server MUST NOT reply to a Notification, including those that are within a batch
 * request" (JSON-RPC 2.0 §4.1), and geth answers none.
 */
export type Checked =
  | PassedCall
  | {
      readonly ok: false;
      readonly json: string;
      readonly code: RpcErrorCode;
      readonly method?: string;
      readonly notification: boolean;
    };

/** A call that passed its checks. What goes upstream is built only when the body cannot go as received. */
export class PassedCall {
  readonly ok = true;
  readonly call: RawCall;
  readonly method: string;
  readonly access: MethodAccess;
  readonly id: string | undefined;

  constructor(call: RawCall, method: string, access: MethodAccess) {
    this.call = call;
    this.method = method;
    this.access = access;
    this.id = call.members.get("id");
  }

  /**
   * What goes upstream is what was validated: the envelope's members only, the method as parsed, and the
   * id and params as the caller's own source text (so an id keeps all its digits). Others are dropped.
   */
  get json(): string {
    return this.withParams(this.call.members.get("params"));
  }

  /** `json` with other params: an unsubscribe naming the id its subscription has on the node now. */
  withParams(params: string | undefined): string {
    const { members } = this.call;
    const jsonrpc = members.get("jsonrpc");
    let out = "{";
    if (jsonrpc !== undefined) out += `"jsonrpc":${jsonrpc},`;
    if (this.id !== undefined) out += `"id":${this.id},`;
    out += `"method":${JSON.stringify(this.method)}`;
    if (params !== undefined) out += `,"params":${params}`;
    return `${out}}`;
  }
}

/** The members `PassedCall.json` keeps. */
const ENVELOPE_MEMBERS = ["jsonrpc", "id", "method", "params"];

/**
 * Whether a message can go upstream as received instead of as its calls' `json`: every call in it passed,
 * each has the envelope's members only, and nothing in it is escaped, so no member name or method can
 * read differently to the node than it did to the checks. Re-serialising it would change only spacing
 * and member order, and would cost a string per call and a second encoding of the body.
 */
export function sendableAsReceived(text: string, checked: readonly Checked[]): boolean {
  if (text.includes("\\")) return false;
  for (const call of checked) {
    if (!call.ok) return false;
    const { members } = call.call;
    let kept = 0;
    for (const name of ENVELOPE_MEMBERS) if (members.has(name)) kept++;
    if (kept !== members.size) return false;
  }
  return true;
}

export interface CallRules {
  readonly policy: JsonRpcPolicy;
  /** The caller's plan; undefined for a public caller, who has no dedicated methods either. */
  readonly plan: PlanTerms | undefined;
  readonly support: GatewayConfig["support"];
  /** Subscriptions and stateful calls only make sense on a WebSocket. */
  readonly transport: "http" | "websocket";
  /** What the key's owner restricted it to, and where each method names its contract (registry `contracts`). */
  readonly keyRules?: KeyRules | undefined;
  readonly contracts?: Readonly<Record<string, readonly (readonly string[])[]>> | undefined;
  /** Where a method takes state put in place for the call (registry `stateOverrides`). */
  readonly stateOverrides?: Readonly<Record<string, readonly string[]>> | undefined;
  /** Where a method takes an option whose values may answer every touched account's state (registry `stateDumps`). */
  readonly stateDumps?: Readonly<Record<string, StateDumpRule>> | undefined;
  /** The params' members the gateway reads by name, folded to lower case (member-case.ts). */
  readonly membersRead?: ReadonlyMap<string, string> | undefined;
  /** The HTTP request's id (http/request-id.ts), which each refusal names. */
  readonly requestId?: string | undefined;
  /**
   * For a call in a batch or on a WebSocket, whose refusal is its own (pipeline/plan-upstream.ts): a range
   * call that cannot be split and is wider than its interface's split limit, judged against the label's
   * head; a use of another caller's filter.
   */
  readonly callRefusal?: ((call: PassedCall) => CallRefusal | undefined) | undefined;
}

/** Why the gateway refuses one call of a batch or of a WebSocket, alone: its code and detail. */
export interface CallRefusal {
  readonly code: RpcErrorCode;
  readonly detail: Record<string, unknown>;
}

/** Applies the envelope rule and the method allow-list to one call. */
export function checkCall(rules: CallRules, call: RawCall): Checked {
  const { policy } = rules;
  if (!policy.validate(call.value)) {
    const first = policy.validate.errors?.[0];
    const detail = { reason: `${first?.instancePath || "request"} ${first?.message ?? "is invalid"}`.trim() };
    // an invalid request object is answered, with or without an id (JSON-RPC 2.0 §5; geth's too)
    return refusal(rules, "INVALID_REQUEST", call, detail, undefined, false);
  }
  const { method, params } = call.value as { method: string; params?: unknown };
  // a member the gateway reads, in another case: a node written in Go would read it, the gateway not
  const variant =
    rules.membersRead === undefined ? undefined : memberInAnotherCase(params, rules.membersRead);
  if (variant !== undefined) return no(rules, "INVALID_REQUEST", call, refusalOf(variant));
  const access = policy.methods.get(method);
  // the unknown name is echoed to help with a typo, never a key sent where the method goes
  if (access === undefined)
    return no(rules, "METHOD_NOT_FOUND", call, {
      method: method.includes(KEY_PREFIX) ? withoutKeys(method) : method,
    });
  if (rules.transport === "http" && access !== "shared" && access !== "dedicated") {
    return no(rules, "WEBSOCKET_ONLY", call, { method }, method);
  }
  // the node serves one method under several names (registry `aliases`): a list naming one names them all,
  // else a plan disabling state_call would serve state_callAt, and a key allowing chain_subscribeNewHeads
  // would refuse the chain_subscribeNewHead polkadot.js sends
  const aliases = policy.aliases?.get(method);
  const terms = rules.plan;
  const disabled =
    terms !== undefined &&
    (aliases === undefined ? terms.disables(method) : aliases.some((name) => terms.disables(name)));
  if ((access === "dedicated" && terms?.dedicatedMethods !== true) || disabled) {
    const plan = rules.plan?.name;
    return no(
      rules,
      "METHOD_NOT_ON_PLAN",
      call,
      {
        method,
        ...(plan === undefined ? {} : { plan }),
        ...dedicatedPointer(rules.support),
      },
      method,
    );
  }
  // a page larger than the registry lets through: a node may build that whole answer in memory
  const page = policy.reads?.pageSizes?.[method];
  const size = page === undefined ? undefined : pageSize(policy, method, params, page.param);
  if (page !== undefined && size !== undefined && size > page.refuseAbove)
    return no(rules, "PAGE_TOO_LARGE", call, { method, size, refuseAbove: page.refuseAbove }, method);
  // text in another form a node may still read as a number (Python's int() takes "1_000000", " 9"): not as sent
  if (size === NOT_READ)
    return no(rules, "INVALID_REQUEST", call, {
      reason: `the page size of ${method} is neither a number nor hex or decimal digits`,
    });
  const keyRules = rules.keyRules;
  if (keyRules !== undefined) {
    // a key allowed to subscribe may always cancel what it opened
    const cancels = access === "unsubscribe" && allowsSubscribing(policy, keyRules);
    const allowed =
      aliases === undefined
        ? keyRules.allowsMethod(method)
        : aliases.some((name) => keyRules.allowsMethod(name));
    if (!allowed && !cancels)
      return no(rules, "KEY_SETTING_REFUSED", call, { setting: "methods", method }, method);
    const paths = keyRules.limitsContracts ? contractsPaths(rules, method, access, call.value) : undefined;
    const names = rules.policy.reads?.paramNames?.[method];
    const named = paths?.flatMap((path) => addressesAt(call.value, byName(path, call.value, names)));
    if (named !== undefined && !keyRules.allowsContracts(named)) return contractsRefusal(rules, call, method);
    // state put in place for the call (code at an address) runs what the contracts list never named
    const overrides = keyRules.limitsContracts ? rules.stateOverrides?.[method] : undefined;
    if (overrides !== undefined && holdsAny(call.value, overrides))
      return contractsRefusal(
        rules,
        call,
        method,
        "a key limited to its contracts may not put state in place for a call (state overrides)",
      );
    // a tracer or trace type that answers the state of every account the call touches (prestateTracer,
    // stateDiff) shows the storage of contracts the list never named
    const dumps = keyRules.limitsContracts ? rules.stateDumps?.[method] : undefined;
    const dumped = dumps === undefined ? undefined : dumpAsked(call.value, dumps);
    if (dumps !== undefined && dumped !== undefined)
      return contractsRefusal(rules, call, method, dumpReason(dumps, dumped));
  }
  return new PassedCall(call, method, access);
}

/** A page size given as text in no form the gateway reads. */
const NOT_READ = -1;

/**
 * The page size a call asks for: a JSON number, or text of hex (`0x…`, a Rust node's `Uint32`) or decimal
 * digits, as a node reads it; none (the node's default) is undefined, and other text NOT_READ. Another JSON
 * type the node refuses itself.
 */
function pageSize(
  policy: JsonRpcPolicy,
  method: string,
  params: unknown,
  param: number | string,
): number | undefined {
  const reads = policy.reads;
  if (reads === undefined) return undefined;
  const value =
    typeof param === "number"
      ? paramAt(reads, method, params, param)
      : typeof params === "object" && params !== null && !Array.isArray(params)
        ? (params as Record<string, unknown>)[param]
        : undefined;
  if (typeof value === "number") return value;
  if (typeof value !== "string") return undefined;
  return /^(0[xX][0-9a-fA-F]+|[0-9]+)$/.test(value) ? Number(value) : NOT_READ;
}

/** A call refused by its key's contract allow-list, saying why where the list alone does not. */
function contractsRefusal(rules: CallRules, call: RawCall, method: string, reason?: string): Checked {
  const detail =
    reason === undefined ? { setting: "contracts", method } : { setting: "contracts", method, reason };
  return no(rules, "KEY_SETTING_REFUSED", call, detail, method);
}

/** Whether a key's method list allows any of the dialect's subscribe methods. */
function allowsSubscribing(policy: JsonRpcPolicy, keyRules: KeyRules): boolean {
  for (const [name, access] of policy.methods)
    if (access === "subscribe" && keyRules.allowsMethod(name)) return true;
  return false;
}

/**
 * Where a call names its contracts (registry `contracts`); for a subscription to events (an EVM `logs`
 * subscription, registry `subscriptions.kinds`), where its filter does: the filter its range query takes,
 * at the subscribe call's `filterParam`-th param. Without it a key locked to its contracts could follow
 * every contract's logs over a WebSocket.
 */
function contractsPaths(
  rules: CallRules,
  method: string,
  access: MethodAccess,
  value: unknown,
): readonly (readonly string[])[] | undefined {
  const direct = rules.contracts?.[method];
  if (direct !== undefined || access !== "subscribe") return direct;
  const params = (value as { params?: unknown }).params;
  const first = Array.isArray(params) ? params[0] : undefined;
  const kind = rules.policy.subscriptions?.kinds.find(
    (k) =>
      k.events !== undefined && k.subscribe.includes(method) && (k.first === undefined || k.first === first),
  );
  const backfill = kind?.events?.backfill;
  const query = backfill === undefined ? undefined : rules.contracts?.[backfill.method];
  // the range query's paths are params.0.<member>: the subscription's filter is its filterParam-th param
  return backfill === undefined || query === undefined
    ? undefined
    : query.map((path) => ["params", String(backfill.filterParam), ...path.slice(2)]);
}

/**
 * A params path (`params.0.contract_address`) in a call whose params come by name (`{"request": …}`, as
 * some SDKs send them): its place turned into the name the registry gives that place (`reads.paramNames`).
 */
function byName(
  path: readonly string[],
  value: unknown,
  names: readonly string[] | undefined,
): readonly string[] {
  const params = (value as { params?: unknown }).params;
  if (names === undefined || typeof params !== "object" || params === null || Array.isArray(params))
    return path;
  const name = names[Number(path[1])];
  return name === undefined ? path : [path[0] as string, name, ...path.slice(2)];
}

/**
 * The first value a call asks for at its rule's `at` (each value of a list there) that the rule does not
 * `allow`, "" for the option left out; undefined when it asks for none such.
 */
function dumpAsked(value: unknown, rule: StateDumpRule): string | undefined {
  const asked = addressesAt(value, rule.at);
  if (asked.length === 0 && !isList(value, rule.at)) asked.push("");
  return asked.find((one) => !rule.allow.includes(one));
}

/** Why a call asking for `asked` (the rule's option left out: "") is refused, and what it may ask for. */
function dumpReason(rule: StateDumpRule, asked: string): string {
  const at = rule.at.join(".");
  const what = asked === "" ? `a call that leaves out ${at}` : `${JSON.stringify(asked)} at ${at}`;
  const allowed = rule.allow.filter((value) => value !== "").map((value) => JSON.stringify(value));
  return `a key limited to its contracts may not send ${what}: its answer holds the state (storage) of every contract the call or transaction touches, named or not; it may ask there for ${allowed.join(", ")}`;
}

/** Whether the member at `path` is a list (an empty one names no value, but does not leave the option out). */
function isList(value: unknown, path: readonly string[]): boolean {
  let at: unknown = value;
  for (const member of path) {
    if (typeof at !== "object" || at === null || member === "*") return false;
    at = (at as Record<string, unknown>)[member];
  }
  return Array.isArray(at);
}

/** Whether a parsed call holds something at `path` (`*` for each element of a list): a value not null nor empty. */
function holdsAny(value: unknown, path: readonly string[]): boolean {
  let at: unknown = value;
  for (const [i, member] of path.entries()) {
    if (typeof at !== "object" || at === null) return false;
    if (member === "*") {
      const rest = path.slice(i + 1);
      return Array.isArray(at) && at.some((element) => holdsAny(element, rest));
    }
    at = (at as Record<string, unknown>)[member];
  }
  if (at === undefined || at === null) return false;
  return typeof at !== "object" || Object.keys(at).length > 0;
}

/**
 * The addresses at `path` in a parsed call (`params.0.to`) or `{ body }` (`body.contract_address`): a
 * string, or each string of a list (eth_getLogs' `address` may be either); none when the member is absent.
 */
export function addressesAt(value: unknown, path: readonly string[]): string[] {
  let at: unknown = value;
  for (const [i, member] of path.entries()) {
    if (typeof at !== "object" || at === null) return [];
    // each element of a list (eth_simulateV1's calls): one that names none (a contract's creation) is "",
    // which no allow-list holds
    if (member === "*") {
      if (!Array.isArray(at)) return [];
      const rest = path.slice(i + 1);
      return at.flatMap((element) => {
        const found = addressesAt(element, rest);
        return found.length === 0 ? [""] : found;
      });
    }
    // an object's member names (eth_getStorageValues' addresses, each the key of its slots)
    if (member === "{}") return Array.isArray(at) ? [] : Object.keys(at);
    at = (at as Record<string, unknown>)[member];
  }
  if (typeof at === "string") return [at];
  return Array.isArray(at) ? at.filter((a): a is string => typeof a === "string") : [];
}

/**
 * A refusal of one call, naming the request's id as every error body the gateway writes does. `method`:
 * one of the interface's own (a plan's or a key's refusal), which the access line and the metrics name,
 * from a bounded set.
 */
export function no(
  rules: CallRules,
  code: RpcErrorCode,
  call: RawCall,
  detail: Record<string, unknown>,
  method?: string,
): Checked {
  return refusal(rules, code, call, detail, method, isNotification(call));
}

/** A valid JSON-RPC 2.0 request object without an id (§4.1): never answered, refused or not. */
function isNotification(call: RawCall): boolean {
  return !call.members.has("id") && (call.value as { jsonrpc?: unknown }).jsonrpc === "2.0";
}

function refusal(
  rules: CallRules,
  code: RpcErrorCode,
  call: RawCall,
  detail: Record<string, unknown>,
  method: string | undefined,
  notification: boolean,
): Checked {
  const { requestId } = rules;
  const json = rpcErrorJson(
    code,
    idOf(call),
    requestId === undefined ? detail : { ...detail, requestId },
    undefined,
    errorFormOf(rules.policy, isLegacyCall(call)),
  );
  return method === undefined
    ? { ok: false, code, json, notification }
    : { ok: false, code, json, method, notification };
}

/** Whether a call is framed as JSON-RPC 1.0: its `jsonrpc` member "1.0", or none. */
export function isLegacyCall(call: RawCall): boolean {
  const version = call.members.get("jsonrpc");
  return version === undefined || version === '"1.0"';
}

/**
 * What a refusal made before the body was read answers the call in it with: its id token ("null" for a
 * batch, a body that is not JSON-RPC, or a call without a valid id), and whether it is framed as JSON-RPC
 * 1.0 (no `jsonrpc`, or "1.0"), which a dialect with `legacyReplies` answers in 1.0's shape.
 */
export function replyIn(body: Buffer, maxDepth: number): { readonly id: string; readonly legacy: boolean } {
  try {
    const parsed = parseJsonRpcBody(body.toString("utf8"), maxDepth);
    const only = parsed.batch ? undefined : parsed.calls[0];
    return only === undefined ? NO_REPLY : { id: idOf(only), legacy: isLegacyCall(only) };
  } catch {
    return NO_REPLY;
  }
}

const NO_REPLY = { id: "null", legacy: false } as const;

/** The id to answer with: the caller's own token when it is a valid id, else null (JSON-RPC 2.0 §5). */
export function idOf(call: RawCall): string {
  const raw = call.members.get("id");
  if (raw === undefined) return "null";
  const id = (call.value as { id?: unknown }).id;
  const valid =
    id === null ||
    typeof id === "number" ||
    typeof id === "string" ||
    (typeof id === "object" && !Array.isArray(id));
  return valid ? raw : "null";
}
