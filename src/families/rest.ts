import type { IncomingMessage } from "node:http";
import type { Dispatcher } from "undici";
import { headCallNeed, type ReadNeed } from "../answers/read-need.js";
import { restReadNeed } from "../answers/rest-read-need.js";
import { type CacheRead, restCacheRead } from "../cache/cache-read.js";
import { dedicatedPointer } from "../errors/dedicated-pointer.js";
import { GatewayError } from "../errors/table.js";
import { requestMediaType } from "../http/body.js";
import { rawHeader } from "../http/raw-headers.js";
import { addressesAt } from "../jsonrpc/check.js";
import { memberInAnotherCase, membersRead, refusalOf } from "../jsonrpc/member-case.js";
import { checkJsonDepth } from "../jsonrpc/scan.js";
import type { KeyRules } from "../keys/key-settings.js";
import type { Mounted } from "../pipeline/stages.js";
import { routeUnits } from "../plans/compute-units.js";
import { matchRoute } from "../registry/match-route.js";
import type { ListRule } from "../registry/types.js";
import type { Authorized, Family, FamilySettings, RoutedRequest } from "./family.js";
import { type BodyBlock, bodyReads } from "./rest-body-reads.js";

// Bodies a REST node takes: JSON for most, raw bytes for signed transactions (algod takes msgpack).
const RAW_TYPES = new Set(["application/x-binary", "application/msgpack", "application/octet-stream"]);
// text/plain: JSON sent as curl's `--data-binary` with that type, or a transaction in hex (Esplora's POST
// /tx), which nests nothing; curl's `-d` form type is taken when its body is JSON (bodyMediaType)
const BODY_TYPES = new Set(["application/json", "text/plain", ...RAW_TYPES]);
const WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/**
 * The REST family: the method and the path below the mount must match one of the interface's registry
 * routes; the query string goes along, and the body of a POST, PUT or PATCH in one of the types above.
 */
export function restFamily(settings: FamilySettings): Family {
  return {
    style: "rest",
    route: (req, mounted) => routeRest(req, mounted, settings),
  };
}

/** The REST half of a family: also what a mixed mount's HTTP routes go through. */
export function routeRest(req: IncomingMessage, mounted: Mounted, settings: FamilySettings): RoutedRequest {
  const routes = mounted.mount.policy.routes;
  if (routes === undefined) throw new GatewayError("NOT_FOUND");
  // HEAD is GET without the body (RFC 9110 9.3.2): the node is asked the GET, and Node's response to a
  // HEAD request drops the body it is written
  const method = req.method === "HEAD" ? "GET" : (req.method ?? "GET");
  const match = matchRoute(routes, method, mounted.segments);
  if (match.kind === "not-found") throw new GatewayError("NOT_FOUND");
  if (match.kind === "method-not-allowed") {
    const allow = match.allow.includes("GET") ? [...match.allow, "HEAD"] : match.allow;
    throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow }, { allow: allow.join(", ") });
  }
  const { plan } = mounted.admitted;
  if (
    (match.access === "dedicated" && plan?.dedicatedMethods !== true) ||
    plan?.disables(`${method} ${match.shape}`)
  ) {
    // the route by its shape, as a plan's disabledMethods names it: never the raw path, whose segments are the caller's
    throw new GatewayError("METHOD_NOT_ON_PLAN", {
      route: `${method} ${match.shape}`,
      ...(plan === undefined ? {} : { plan: plan.name }),
      ...dedicatedPointer(settings.support),
    });
  }
  const { writeRoutes } = mounted.mount.policy;
  const write =
    writeRoutes !== undefined && matchRoute(writeRoutes, method, mounted.segments).kind === "match";
  const route = `${method} ${match.shape}`;
  const keyRules = mounted.admitted.principal?.rules;
  if (keyRules !== undefined && !keyRules.allowsMethod(route))
    throw new GatewayError("KEY_SETTING_REFUSED", { setting: "methods", route });
  // a route that names a contract in its body, path or query is checked on it (registry `contracts`)
  const contractAt = keyRules?.limitsContracts ? mounted.mount.policy.contracts?.[route] : undefined;
  const { longPolls } = mounted.mount.policy;
  const heldMs =
    longPolls?.routes !== undefined && matchRoute(longPolls.routes, method, mounted.segments).kind === "match"
      ? longPolls.heldMs
      : 0;
  const rules = mounted.mount.policy.restReads;
  // a long poll's answer is the moment's, however its path reads
  const cacheable = rules?.cache !== undefined && !write && match.access !== "stream" && heldMs === 0;
  const accept = rawHeader(req.rawHeaders, "accept") ?? "application/json";
  const { path, query } = mounted.admitted.target;
  // a list of blocks walked back from each head, as long as the query asks: refused past its limit
  const list = rules?.lists?.[match.shape];
  if (list !== undefined) checkList(list, route, query);
  const named = rules?.bodies?.[match.shape];
  const member = named ?? rules?.pageEnds?.[match.shape];
  const bodyBlock: BodyBlock | undefined =
    rules === undefined || member === undefined || write
      ? undefined
      : {
          rules,
          shape: match.shape,
          member,
          endsPage: named === undefined,
          cacheKey: cacheable ? `${route}\n${path}${query}\n${accept}` : undefined,
          errorMember: mounted.mount.policy.errorMember,
        };
  const cache =
    !cacheable || rules === undefined || bodyBlock !== undefined
      ? undefined
      : restCacheRead(rules, {
          route,
          shape: match.shape,
          segments: mounted.segments,
          path,
          query,
          accept,
          isHead: isHeadCall(mounted, method),
        });
  return new RestRequest(
    req,
    method as Dispatcher.HttpMethod,
    route,
    match.access === "stream",
    heldMs,
    write,
    bodyBlock === undefined ? readsOf(mounted, method, match.shape) : undefined,
    cache,
    bodyBlock,
    query,
    routeUnits(mounted.mount.policy.computeUnits, route, mounted.admitted.endpoint),
    contractAt === undefined
      ? undefined
      : {
          rules: keyRules as KeyRules,
          at: contractAt,
          segments: mounted.segments,
          membersRead: membersRead(mounted.mount.policy),
        },
    settings.limits.maxJsonDepth,
  );
}

/**
 * Refuses (BLOCK_RANGE_TOO_LARGE) a list of blocks (registry `reads.lists`) longer than its `refuseAbove`:
 * its length parameter's largest value times the heads it names (one when it names none). A length in
 * another form than decimal digits, which a node may read as a number all the same (`0x…`, `1_000`), counts
 * as the longest.
 */
function checkList(rule: ListRule, route: string, query: string): void {
  if (query === "") return;
  const params = new URLSearchParams(query);
  let length = 0;
  for (const value of params.getAll(rule.member)) {
    const n = /^\d+$/.test(value) ? Number(value) : Number.MAX_SAFE_INTEGER;
    if (n > length) length = Math.min(n, Number.MAX_SAFE_INTEGER);
  }
  const heads = rule.each === undefined ? 1 : Math.max(1, params.getAll(rule.each).length);
  const blocks = length * heads;
  if (blocks > rule.refuseAbove)
    throw new GatewayError("BLOCK_RANGE_TOO_LARGE", {
      route,
      [rule.member]: length,
      ...(rule.each === undefined ? {} : { heads }),
      blocks: Math.min(blocks, Number.MAX_SAFE_INTEGER),
      refuseAbove: rule.refuseAbove,
    });
}

/**
 * What the request needs of the node (src/answers/read-need.ts, rest-read-need.ts): the head call, or a block
 * its path names.
 */
function readsOf(mounted: Mounted, method: string, shape: string): ReadNeed | undefined {
  if (isHeadCall(mounted, method)) return headCallNeed(mounted.mount.head);
  const rules = mounted.mount.policy.restReads;
  return rules === undefined ? undefined : restReadNeed(rules, shape, mounted.segments);
}

/**
 * Whether the request is the mount's REST head call (`GET /v2/status`): it then reads at the head and its
 * answer raises the label's served head (src/answers/), like a JSON-RPC head call.
 */
function isHeadCall(mounted: Mounted, method: string): boolean {
  const head = mounted.mount.head;
  if (head.kind !== "rest") return false;
  // a POST head call with an empty body is the same call as a GET of its path, where the route takes both
  // (java-tron's servlets: TronWeb's getCurrentBlock GETs /wallet/getnowblock); the route matched already
  const same =
    head.method === method || (method === "GET" && head.method === "POST" && isEmptyObject(head.body));
  return same && head.path === `/${mounted.segments.join("/")}`;
}

function isEmptyObject(value: unknown): boolean {
  return (
    typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0
  );
}

/** A key's contract list, where the route names its contract (`["path", "1"]`, `["query", "value"]`), and the request's path segments. */
interface ContractCheck {
  readonly rules: KeyRules;
  /** Each place the route names contracts (registry `contracts`). */
  readonly at: readonly (readonly string[])[];
  readonly segments: readonly string[];
  /** The member names the mount's rules read (jsonrpc/member-case.ts): one in another case is refused. */
  readonly membersRead: ReadonlyMap<string, string>;
}

class RestRequest implements RoutedRequest {
  readonly family = "rest";
  readonly readsBody: boolean;
  readonly #req: IncomingMessage;
  readonly #method: Dispatcher.HttpMethod;
  /** The route by its shape (`GET /v2/accounts/{}`): for the access log and the metrics, never the raw path. */
  readonly #route: string;
  readonly #stream: boolean;
  /** A long poll's hold (registry `longPolls`), else 0. */
  readonly #heldMs: number;
  readonly #write: boolean;
  readonly #reads: ReadNeed | undefined;
  readonly #cache: CacheRead | undefined;
  /** The route names its block in its body or query: its reads and cache read are known at authorize. */
  readonly #bodyBlock: BodyBlock | undefined;
  readonly #query: string;
  readonly #units: number;
  /** The key's contract list, and where this route's body, path or query names its contract. */
  readonly #contract: ContractCheck | undefined;
  /** limits.maxJsonDepth: a JSON body nested deeper is refused. */
  readonly #maxDepth: number;

  constructor(
    req: IncomingMessage,
    method: Dispatcher.HttpMethod,
    route: string,
    stream: boolean,
    heldMs: number,
    write: boolean,
    reads: ReadNeed | undefined,
    cache: CacheRead | undefined,
    bodyBlock: BodyBlock | undefined,
    query: string,
    units: number,
    contract: ContractCheck | undefined,
    maxDepth: number,
  ) {
    this.#req = req;
    this.#method = method;
    this.#route = route;
    this.#stream = stream;
    this.#heldMs = heldMs;
    this.#write = write;
    this.#reads = reads;
    this.#cache = cache;
    this.#bodyBlock = bodyBlock;
    this.#query = query;
    this.#units = units;
    this.#contract = contract;
    this.#maxDepth = maxDepth;
    this.readsBody = WITH_BODY.has(method);
  }

  authorize(body: Buffer): Authorized {
    const headers = ["accept", rawHeader(this.#req.rawHeaders, "accept") ?? "application/json"];
    const media = this.readsBody ? bodyMediaType(requestMediaType(this.#req), body) : undefined;
    if (media !== undefined) {
      if (body.length > 0 && !BODY_TYPES.has(media)) throw new GatewayError("UNSUPPORTED_MEDIA_TYPE");
      headers.push("content-type", media);
    }
    const contract = this.#contract;
    const parses = contract !== undefined || this.#bodyBlock !== undefined;
    // A JSON body is held to limits.maxJsonDepth before the checks below walk it recursively (the contract
    // rule's members, the cache key's canonical form: a stack overflow) and before a node reads it
    const raw = media !== undefined && RAW_TYPES.has(media);
    const text = body.length > 0 && (parses || !raw) ? body.toString("utf8") : undefined;
    if (text !== undefined && !raw) checkJsonDepth(text, this.#maxDepth);
    const json = parses ? jsonOf(text) : undefined;
    // raw bytes only when they are JSON after all (V8's JSON.parse is iterative): a byte 0x5b is no nesting
    if (raw && json !== undefined) checkJsonDepth(text as string, this.#maxDepth);
    // a member the contract rule reads, in another case: a node written in Go reads it, the gateway not
    const variant = contract && memberInAnotherCase(json, contract.membersRead);
    if (variant !== undefined) throw new GatewayError("INVALID_REQUEST", refusalOf(variant));
    const request = { body: json, path: contract?.segments, query: contract && queryValues(this.#query) };
    const named = contract?.at.flatMap((path) => addressesAt(request, path));
    if (contract !== undefined && !contract.rules.allowsContracts(named as string[]))
      throw new GatewayError("KEY_SETTING_REFUSED", { setting: "contracts", route: this.#route });
    const block =
      this.#bodyBlock === undefined ? undefined : bodyReads(this.#bodyBlock, json, this.#query, text);
    return {
      cost: 1,
      computeUnits: this.#units,
      replyId: "null",
      answer: undefined,
      outgoing: {
        method: this.#method,
        headers,
        body: this.readsBody ? body : undefined,
        stream: this.#stream,
        heldMs: this.#heldMs,
        write: this.#write,
        reads: block === undefined ? this.#reads : block.reads,
        restCache: block === undefined ? this.#cache : block.cache,
      },
      refusals: undefined,
      method: undefined,
      route: this.#route,
      batch: undefined,
      refused: undefined,
    };
  }
}

/**
 * A query's parameters, each name → all its values (decoded as a servlet's getParameter decodes them): a
 * contract named twice is held to the list both times, whichever the node reads.
 */
function queryValues(query: string): Record<string, string[]> {
  const params = new URLSearchParams(query);
  return Object.fromEntries([...params.keys()].map((name) => [name, params.getAll(name)]));
}

/**
 * The type a body goes to the node as: its own, or JSON for one sent as curl's `-d` sends it (a form type)
 * that is a JSON object or array, as the networks' own docs write their calls (java-tron's reads its body
 * whatever its type). A form body that is a form stays one, and is refused where no node takes it.
 */
function bodyMediaType(media: string | undefined, body: Buffer): string {
  if (media === undefined) return "application/json";
  if (media !== FORM || body.length === 0) return media;
  const first = body.find((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09);
  return (first === 0x7b || first === 0x5b) && jsonOf(body.toString("utf8")) !== undefined
    ? "application/json"
    : media;
}

const FORM = "application/x-www-form-urlencoded";

/** A body as JSON, or undefined when it is none (it then names no contract). */
function jsonOf(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
