import { namedBlock } from "../answers/block-params.js";
import { ReadNeed } from "../answers/read-need.js";
import {
  inFinalView,
  readsAtHead,
  restAtHeadNeed,
  restByHashNeed,
  restFinalizedNeed,
} from "../answers/rest-read-need.js";
import { type CacheRead, canonical, type Lifetime, numbersAsWritten } from "../cache/cache-read.js";
import type { RestReadRules } from "../registry/types.js";

/**
 * A REST route that names its block in a member of its JSON body, or in the query parameter of that name
 * for a GET (registry `reads.bodies`: java-tron's `{"num": 5}`, `{"value": "<block id>"}`, `?num=5`). What
 * the request needs of a node, and what the cache may answer it with, are known only once its body is read.
 */
export interface BodyBlock {
  readonly rules: RestReadRules;
  readonly shape: string;
  readonly member: string;
  /** The member names the block after a page's last (registry `pageEnds`), not a block the route reads. */
  readonly endsPage: boolean;
  /** The request's cache key without its body (route, path, query, accept); undefined: never cached. */
  readonly cacheKey: string | undefined;
  /** The member a node answers its errors in with a 200 (java-tron's `Error`). */
  readonly errorMember: string | undefined;
}

/** The block the request names: its JSON body's member, else its query parameter (a number when digits). */
function namedValue(member: string, json: unknown, query: string): unknown {
  if (json !== null && typeof json === "object" && !Array.isArray(json))
    return member.includes(".") ? nestedMember(json, member) : (json as Record<string, unknown>)[member];
  const value = query === "" ? null : new URLSearchParams(query).get(member);
  if (value === null) return undefined;
  return /^\d{1,15}$/.test(value) ? Number(value) : value;
}

/**
 * A member inside another, its path's names joined by dots (`block_identifier.number`: java-tron's
 * getaccountbalance names its block in an object, and a node that has not reached that number answers
 * ItemNotFoundException, so the read needs the block as `{"num": …}` does).
 */
function nestedMember(json: object, path: string): unknown {
  let value: unknown = json;
  for (const name of path.split(".")) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

/**
 * A page of blocks up to the one `value` names, which it leaves out: its last block, capped at the head when
 * planned. In a finalized view, each node answers the blocks it has finalized: the page goes first to the
 * node that named the highest finalized block.
 */
function pageNeed(rules: RestReadRules, shape: string, value: unknown): ReadNeed | undefined {
  const named = value === undefined ? "none" : namedBlock(rules.block, value);
  if (typeof named !== "number" || named < 1) return undefined;
  const need = new ReadNeed();
  need.single = true;
  need.pageEnd = named - 1;
  need.atFinalized = inFinalView(rules, shape);
  return need;
}

/**
 * What the request needs of a node (a numbered block it must have reached) and what the cache may answer
 * it with: by the block it names, final at or below the finalized height, or when named by its id.
 */
export function bodyReads(
  block: BodyBlock,
  json: unknown,
  query: string,
  /** The body's text, as the node reads it. */
  source: string | undefined,
): { readonly reads: ReadNeed | undefined; readonly cache: CacheRead | undefined } {
  const value = namedValue(block.member, json, query);
  if (block.endsPage) return { reads: pageNeed(block.rules, block.shape, value), cache: undefined };
  // one that names no block reads the head where the registry says so (java-tron's getblock), or the node's
  // finalized block (its getblock on a finalized view: each node's own, the highest named goes first), and
  // is the node's to refuse elsewhere (java-tron answers an Error): nothing to read by
  if (value === undefined) {
    const finalized = restFinalizedNeed(block.rules, block.shape);
    if (finalized !== undefined) return { reads: finalized, cache: undefined };
    if (readsAtHead(block.rules, block.shape))
      return { reads: restAtHeadNeed(block.rules, block.shape), cache: undefined };
  }
  const named = value === undefined ? "none" : namedBlock(block.rules.block, value);
  if (named === "none" || named === "head") return { reads: undefined, cache: undefined };
  let reads: ReadNeed | undefined;
  if (named === "hash") reads = restByHashNeed(block.rules);
  else {
    reads = new ReadNeed();
    reads.single = true;
    reads.highestBlock = named;
    // a node's finalized view holds a block only once that node has finalized it, its head past it or not
    reads.atFinalized = inFinalView(block.rules, block.shape);
  }
  const rules = block.rules.cache;
  if (block.cacheKey === undefined || rules === undefined || !rules.atBlock?.includes(block.shape))
    return { reads, cache: undefined };
  // a body with an integer past the safe ones has no key (canonical), nor one with a number written
  // otherwise than its value reads (`{"num": 5.0}`, which java-tron's JsonFormat refuses for an int64), nor
  // one JSON.parse refuses that a lenient node reads (java-tron's fastjson takes `{num: 7}`): nothing of it
  // would be in the key, and its answer would be another such body's
  const text =
    json !== undefined ? canonical(json, undefined) : (source ?? "").trim() === "" ? "" : undefined;
  if (text === undefined || !numbersAsWritten(source)) return { reads, cache: undefined };
  const lifetime: Lifetime = { kind: "block", block: named === "hash" ? -1 : named };
  const cache: CacheRead = {
    key: `${block.cacheKey}\n${text}`,
    lifetime,
    id: "",
    rules,
    rest: true,
    errorMember: block.errorMember,
  };
  return { reads, cache };
}
