import {
  blockParam,
  isGenesisTag,
  isOneOf,
  NO_BLOCK_PARAM,
  namedBlock,
  paramAt,
} from "../answers/block-params.js";
import type { PassedCall } from "../jsonrpc/check.js";
import type { BlockParamRule, CacheRules, ReadRules } from "../registry/types.js";

/**
 * How long a call's answer may be kept (docs/cache.md):
 * - `always`: it never changes on the label's chain;
 * - `block`: it reads one block, named by number (`block`) or by hash (`block` is -1): final once that block
 *   is at or below the finalized height; a block named by hash, which a reorg may replace, only on a chain
 *   whose blocks are final at once (kept while the head stays elsewhere);
 * - `blockIn`: the answer names its block (`path`), final once that block is (a block named by hash whose
 *   answer says its height: registry `hashHeightIn`);
 * - `head`: it reads at the head (the head call, a head tag, a `cache.atHead` method), and is kept only
 *   while the label's head stays.
 */
export type Lifetime =
  | { readonly kind: "always" }
  | { readonly kind: "block"; readonly block: number }
  | { readonly kind: "blockIn"; readonly path: readonly string[] }
  | { readonly kind: "head" };

/** A single JSON-RPC call the cache may answer: its key, its lifetime, and the caller's id. */
export interface CacheRead {
  /** The method, the canonical params and the caller's `jsonrpc` member: never the API key. */
  readonly key: string;
  readonly lifetime: Lifetime;
  /** The caller's id as its source text, which the cached answer is sent with ("" for a REST answer). */
  readonly id: string;
  readonly rules: CacheRules;
  /** A REST answer: kept whole, with its content type, and no id in it. */
  readonly rest?: true;
  /** The member a REST node answers its errors in, with a success status (java-tron's `Error`): never kept. */
  readonly errorMember?: string | undefined;
  /**
   * The call goes first to the node that took its caller's last write (docs/upstreams.md, "A caller's own
   * write"), whose mempool holds what other nodes may not have: it waits on no identical call in flight,
   * which another node may answer without the write (a lookup of the transaction by hash: null), and
   * leads none: another caller's call need not wait on that one node, which may first have to reach the
   * head (upstream/call-run.ts `#waitFor`).
   */
  readonly ownNode?: true;
}

/** The read of a call sent first to its caller's write's node (`ownNode`), else as it is. */
export function onOwnNode(read: CacheRead | undefined, ownNode: boolean): CacheRead | undefined {
  return read === undefined || !ownNode ? read : { ...read, ownNode: true };
}

const ALWAYS: Lifetime = { kind: "always" };
const HEAD: Lifetime = { kind: "head" };
const BY_HASH: Lifetime = { kind: "block", block: -1 };

/** The registry's method lists as sets, made once per rule table. */
interface RuleSets {
  readonly always: ReadonlySet<string>;
  readonly atHead: ReadonlySet<string>;
  readonly atBlock: ReadonlySet<string>;
  readonly foldCase: RegExp | undefined;
  readonly blockIn: ReadonlyMap<string, Lifetime>;
  readonly hashHeightIn: ReadonlyMap<string, Lifetime>;
}

const SETS = new WeakMap<CacheRules, RuleSets>();

function setsOf(rules: CacheRules): RuleSets {
  let sets = SETS.get(rules);
  if (sets === undefined) {
    sets = {
      always: new Set(rules.always),
      atHead: new Set(rules.atHead),
      atBlock: new Set(rules.atBlock),
      foldCase: rules.foldCase === undefined ? undefined : new RegExp(rules.foldCase),
      blockIn: new Map(
        Object.entries(rules.blockIn ?? {}).map(([method, path]) => [method, { kind: "blockIn", path }]),
      ),
      hashHeightIn: new Map(
        Object.entries(rules.hashHeightIn ?? {}).map(([method, path]) => [method, { kind: "blockIn", path }]),
      ),
    };
    SETS.set(rules, sets);
  }
  return sets;
}

/**
 * The cache read of a single call, or undefined when its answer may not be kept: a method the registry's
 * `reads.cache` does not name, a live tag (`pending`), a block param the rules cannot read, a call with no id,
 * or a read at the head on a label that keeps none (`keepsHead` false: its key is not even built).
 * `isHeadCall`: it is the interface's head call, kept while the head stays.
 */
export function cacheRead(
  reads: ReadRules,
  call: PassedCall,
  isHeadCall: boolean,
  keepsHead: boolean,
): CacheRead | undefined {
  const rules = reads.cache;
  if (rules === undefined || call.id === undefined) return undefined;
  const lifetime = isHeadCall ? HEAD : lifetimeOf(reads, rules, call);
  if (lifetime === undefined || (lifetime.kind === "head" && !keepsHead)) return undefined;
  const params = (call.call.value as { params?: unknown }).params;
  const jsonrpc = call.call.members.get("jsonrpc") ?? "";
  const text = canonical(params, setsOf(rules).foldCase);
  if (text === undefined || !numbersAsWritten(call.call.members.get("params"))) return undefined;
  const key = `${call.method}\n${text}\n${jsonrpc}`;
  return { key, lifetime, id: rules.idAsText === true ? idAsText(call.id) : call.id, rules };
}

/**
 * Whether every number in params' source text is written as its value reads here (`5`, `1.5`), so that the
 * canonical form names what the node reads: `5.0`, `1e1` and `-0` read here as 5, 10 and 0, and a node
 * that reads an integer param from its text (in Rust or C++) refuses a fraction where it takes `5`; a
 * call keyed as the one it is not would be answered from the other's kept answer, or hand its refusal to
 * the other waiting on it. A long hex string is skipped at once.
 */
export function numbersAsWritten(text: string | undefined): boolean {
  if (text === undefined) return true;
  let i = 0;
  const end = text.length;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // to the closing quote: one not escaped by an odd run of backslashes before it
      let close = text.indexOf('"', i + 1);
      while (close > 0 && escaped(text, close)) close = text.indexOf('"', close + 1);
      if (close < 0) return true;
      i = close + 1;
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      let to = i + 1;
      while (to < end && NUMBER_CHARS.test(text.charAt(to))) to++;
      const written = text.slice(i, to);
      if (String(Number(written)) !== written) return false;
      i = to;
    } else i++;
  }
  return true;
}

/** Whether the quote at `at` follows an odd run of backslashes. */
function escaped(text: string, at: number): boolean {
  let run = 0;
  while (text.charCodeAt(at - 1 - run) === BACKSLASH) run++;
  return run % 2 === 1;
}

const QUOTE = 34;
const MINUS = 45;
const ZERO = 48;
const NINE = 57;
const BACKSLASH = 92;
const NUMBER_CHARS = /[0-9.eE+-]/;

/** A number id's source text as the JSON string a node that answers ids as strings sends back. */
function idAsText(id: string): string {
  return id.startsWith('"') || id === "null" ? id : JSON.stringify(id);
}

function lifetimeOf(reads: ReadRules, rules: CacheRules, call: PassedCall): Lifetime | undefined {
  const sets = setsOf(rules);
  const { method } = call;
  if (sets.always.has(method)) return ALWAYS;
  if (sets.atHead.has(method)) return HEAD;
  const blockIn = sets.blockIn.get(method);
  if (blockIn !== undefined) return blockIn;
  if (!sets.atBlock.has(method)) return undefined;
  const params = (call.call.value as { params?: unknown }).params;
  const range = reads.ranges?.[method];
  if (range !== undefined) {
    // by its place, or by the name the registry gives it (`{"filter": {…}}`, as some SDKs send it)
    const filter = range.param === "params" ? params : paramAt(reads, method, params, range.param);
    if (typeof filter !== "object" || filter === null || Array.isArray(filter)) return undefined;
    const members = filter as Record<string, unknown>;
    if (range.hash !== undefined && members[range.hash] !== undefined) return BY_HASH;
    const from = blockOf(reads, rules, members[range.from]);
    const to = blockOf(reads, rules, members[range.to]);
    if (from === undefined || to === undefined) return undefined;
    // a range that reaches the head is the head's; one wholly below it is as final as its last block
    return to.kind === "head" || from.kind === "head" ? HEAD : to;
  }
  const value = blockParam(reads, call);
  if (value === NO_BLOCK_PARAM) return undefined;
  const lifetime = blockOf(reads, rules, value);
  // a block named by hash whose answer says its height: final once that height is
  return lifetime === BY_HASH ? (sets.hashHeightIn.get(method) ?? BY_HASH) : lifetime;
}

/** What a block param makes of the answer's lifetime: undefined for a live tag or a value no rule reads. */
function blockOf(reads: ReadRules, rules: CacheRules, value: unknown): Lifetime | undefined {
  if (namesLiveTag(reads.block, rules.liveTags, value)) return undefined;
  if (isGenesisTag(reads.block, value)) return { kind: "block", block: 0 };
  const named = namedBlock(reads.block, value);
  if (named === "none") return undefined;
  if (named === "head") return HEAD;
  if (named === "hash") return BY_HASH;
  return { kind: "block", block: named };
}

/**
 * Whether a block param names a live tag, as a string or where a params object names its block
 * (EIP-1898's `{"blockNumber": "pending"}`): what no block holds yet. In any case, as every tag is read
 * (answers/block-params.ts): `PENDING` is the mempool's state to alloy's nodes, and was kept as the head's.
 */
function namesLiveTag(block: BlockParamRule, live: readonly string[] | undefined, value: unknown): boolean {
  if (live === undefined) return false;
  if (typeof value === "string") return isOneOf(live, value);
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const members = value as Record<string, unknown>;
  for (const member of [block.tagMember, block.numberMember]) {
    const named = member === undefined ? undefined : members[member];
    if (isOneOf(live, named)) return true;
  }
  return false;
}

/**
 * Params as one text that is the same for calls that mean the same: object members sorted, and strings the
 * registry's `foldCase` matches (EVM hex) in lower case. Any other string keeps its case: base58
 * addresses are case-sensitive. Undefined for params holding an integer past JavaScript's safe ones
 * (2^53): its value here is the nearest double, which other integers the node reads exactly share
 * (ton-http-api reads a transaction's logical time, 47000000000000001, as Python's int): such a call has no
 * key, and is neither kept, answered from the cache, nor coalesced.
 */
export function canonical(value: unknown, foldCase: RegExp | undefined): string | undefined {
  if (value === undefined) return "";
  if (typeof value === "string")
    return JSON.stringify(foldCase?.test(value) === true ? value.toLowerCase() : value);
  if (typeof value === "number")
    return Number.isInteger(value) && !Number.isSafeInteger(value) ? undefined : String(value);
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  const parts: string[] = [];
  if (Array.isArray(value)) {
    for (const item of value) {
      const part = canonical(item ?? null, foldCase);
      if (part === undefined) return undefined;
      parts.push(part);
    }
    return `[${parts.join(",")}]`;
  }
  const members = value as Record<string, unknown>;
  const names = Object.keys(members)
    .filter((name) => members[name] !== undefined)
    .sort();
  for (const name of names) {
    const part = canonical(members[name], foldCase);
    if (part === undefined) return undefined;
    parts.push(`${JSON.stringify(name)}:${part}`);
  }
  return `{${parts.join(",")}}`;
}

/** A REST GET as the REST family routed it: its route's shape, the segments below the mount, and more. */
export interface RestRequestShape {
  /** `GET /v2/blocks/{}`. */
  readonly route: string;
  /** `/v2/blocks/{}`: the route's shape without its method. */
  readonly shape: string;
  readonly segments: readonly string[];
  /** The caller's path below the key, and its query with its "?" (or ""). */
  readonly path: string;
  readonly query: string;
  /** What the caller accepts: algod answers JSON or msgpack by it. */
  readonly accept: string;
  /** It is the mount's head call (`GET /v2/status`). */
  readonly isHead: boolean;
}

/**
 * The cache read of a REST GET (docs/cache.md), or undefined when its answer may not be kept: the head call
 * (kept while the head stays), a route whose answer never changes (`cache.always`), or a route under a
 * `reads.paths` prefix the rules name (`cache.atBlock`), by the block its segment names. Its key is the
 * path, the query and what the caller accepts; it has no id.
 */
export function restCacheRead(
  rules: Pick<ReadRules, "block" | "paths" | "cache">,
  request: RestRequestShape,
): CacheRead | undefined {
  const cache = rules.cache;
  if (cache === undefined || !request.route.startsWith("GET ")) return undefined;
  const key = `${request.path}${request.query}\n${request.accept}`;
  const read = (lifetime: Lifetime): CacheRead => ({ key, lifetime, id: "", rules: cache, rest: true });
  if (request.isHead) return read(HEAD);
  if (cache.always?.includes(request.route)) return read(ALWAYS);
  for (const prefix of cache.atBlock ?? []) {
    const { shape } = request;
    if (shape !== prefix && !shape.startsWith(`${prefix}/`)) continue;
    const index = rules.paths?.[prefix];
    const segment = index === undefined ? undefined : request.segments[index];
    if (segment === undefined) return undefined;
    const named = namedBlock(rules.block, segment);
    if (named === "none") return undefined;
    return read(named === "head" ? HEAD : named === "hash" ? BY_HASH : { kind: "block", block: named });
  }
  return undefined;
}
