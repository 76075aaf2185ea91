import type { LabelCacheSettings } from "../config/types.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { CacheRules, HeadEncoding } from "../registry/types.js";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { readHeight } from "../upstream/head.js";
import type { Upstream } from "../upstream/upstreams.js";
import { type AnswerCache, type CacheEntry, FINAL, ownBytes } from "./answer-cache.js";

const EMPTY = Buffer.alloc(0);

import { type CacheRead, canonical } from "./cache-read.js";
import { sharedScope } from "./shared-answers.js";

/** A node's answer as the cache holds it: its bytes around the id, and whether it may be kept at all. */
export interface KeptAnswer {
  readonly entry: Omit<CacheEntry, "tier">;
  readonly store: boolean;
  /**
   * A failure: an error other than the node's deterministic answer (a revert), or a REST answer that is no
   * success. It answers the call it was asked for, and no identical call waiting on it: asked again, such a
   * call may well succeed (a node that was busy, one that had not seen the block yet).
   */
  readonly failure: boolean;
}

/**
 * What the cache makes of a node's answer to `read` (docs/cache.md): the answer's text split at its id, so
 * each waiting client gets its own id in it, and whether and how long it is kept. Undefined for an answer
 * that is not one JSON-RPC answer object with an id: it goes to the clients as the node sent it.
 *
 * Kept: a result, or a deterministic error (a revert) of a final call. Final (until evicted): an answer that
 * never changes, or one about a block at or below the finalized height (a block named by hash: one whose
 * answer says such a height, or any on a chain whose blocks are final at once). Any other is kept
 * for the head epoch it was read in (`epoch`), if the head has not moved since, and if the label keeps
 * answers read at the head. An empty result (null, []) only when final, and never for a block named by
 * hash, which the node may not have seen yet.
 */
export function keptAnswer(
  answer: WholeAnswer,
  text: string,
  read: CacheRead,
  group: UpstreamGroup,
  settings: LabelCacheSettings,
  epoch: number,
): KeptAnswer | undefined {
  if (read.rest === true) return keptRest(answer, read, group, settings, epoch);
  const envelopes = text.trimStart().startsWith("{") ? scanMembers(text) : [];
  const members = envelopes.length === 1 ? envelopes[0] : undefined;
  if (members === undefined) return undefined;
  return keptMembers(members, answer.statusCode, read, group, settings, epoch, answer.upstream);
}

/** `keptAnswer` for one answer object's members (one element of a batch's answer, too). */
export function keptMembers(
  members: ReadonlyMap<string, string>,
  statusCode: number,
  read: CacheRead,
  group: UpstreamGroup,
  settings: LabelCacheSettings,
  epoch: number,
  /** The node that answered: as final as that node holds the block (`finalizedHeight`). */
  node: Upstream | undefined,
): KeptAnswer | undefined {
  if (!members.has("id")) return undefined;
  // `{"jsonrpc":"2.0","id":` and `,"result":…}`, written straight into bytes: no joined copy of a large result
  const before: string[] = ["{"];
  const after: string[] = [];
  let seenId = false;
  let first = true;
  for (const [name, value] of members) {
    if (name === "id") {
      before.push(first ? '"id":' : ',"id":');
      seenId = true;
    } else {
      const parts = seenId ? after : before;
      if (!first) parts.push(",");
      parts.push(JSON.stringify(name), ":", value);
    }
    first = false;
  }
  after.push("}");
  const bytes = { before: bytesOf(before), after: bytesOf(after) };
  const error = members.get("error");
  const failure =
    statusCode !== 200 || (error !== undefined && error !== "null" && !deterministic(error, read.rules));
  const lifetime = statusCode === 200 ? lifetimeOf(members, read, group, node, epoch) : undefined;
  const final = lifetime === "final";
  const store =
    lifetime !== undefined &&
    (final || (settings.headRelative && settings.headMaxAgeMs > 0 && group.served.epoch === epoch));
  return {
    entry: {
      ...bytes,
      epoch: final ? FINAL : epoch,
      expiresAt: final ? Number.POSITIVE_INFINITY : performance.now() + headMaxAge(settings, group),
    },
    store,
    failure,
  };
}

/** Whether a node's error is its own answer to the call, the same on every node (a revert: `deterministicErrors`). */
function deterministic(error: string, rules: CacheRules): boolean {
  return rules.deterministicErrors?.some((text) => error.includes(text)) === true;
}

/**
 * A REST answer as the cache holds it: its body whole (algod may answer msgpack) with its content type. Kept when its status is 200: final as `isFinal` says, else for its head epoch.
 */
function keptRest(
  answer: WholeAnswer,
  read: CacheRead,
  group: UpstreamGroup,
  settings: LabelCacheSettings,
  epoch: number,
): KeptAnswer {
  const body = answer.body;
  const at = answer.headers.findIndex((name, i) => i % 2 === 0 && name.toLowerCase() === "content-type");
  const contentType = at < 0 ? "application/json" : (answer.headers[at + 1] as string);
  const headers = nodeHeaders(answer.headers);
  const text = body.length <= 8 ? body.toString("latin1").trim() : "";
  // java-tron answers a block or transaction it does not have with {}
  const empty =
    text === "null" || text === "[]" || text === "{}" || emptyAnswer(body, read.rules.emptyAnswers);
  // a block named by its id that the node has not seen yet is no answer about it
  const byHash = read.lifetime.kind === "block" && read.lifetime.block < 0;
  const failure = answer.statusCode !== 200 || errorIn(body, read.errorMember);
  const ok = !failure && !(empty && byHash);
  // an empty answer is no block's for good: java-tron's {} for one its solidified view does not hold yet
  const final = ok && !empty && isFinal(read, group, undefined, answer.upstream, epoch);
  const store =
    ok &&
    (final || (!empty && settings.headRelative && settings.headMaxAgeMs > 0 && group.served.epoch === epoch));
  return {
    entry: {
      before: ownBytes(body),
      after: EMPTY,
      contentType,
      ...(headers.length === 0 ? {} : { headers }),
      epoch: final ? FINAL : epoch,
      expiresAt: final ? Number.POSITIVE_INFINITY : performance.now() + headMaxAge(settings, group),
    },
    store,
    failure,
  };
}

/**
 * Whether a short REST answer is one the registry's `emptyAnswers` names: a node's for a block it does not
 * hold, though a block may answer so too (a pruned block's count of 0).
 */
function emptyAnswer(body: Buffer, answers: readonly unknown[] | undefined): boolean {
  if (answers === undefined || body.length > 64) return false;
  let json: unknown;
  try {
    json = JSON.parse(body.toString("utf8"));
  } catch {
    return false;
  }
  const text = canonical(json, undefined);
  return text !== undefined && answers.some((answer) => canonical(answer, undefined) === text);
}

/** Of the node's headers a client gets (upstream/response-relay.ts), those a kept answer keeps beside its type. */
const KEPT_HEADERS = new Set(["content-encoding", "cache-control", "etag", "last-modified"]);

function nodeHeaders(passed: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i + 1 < passed.length; i += 2)
    if (KEPT_HEADERS.has((passed[i] as string).toLowerCase()))
      kept.push(passed[i] as string, passed[i + 1] as string);
  return kept;
}

/** Whether a REST answer is an error a node sends with a success status (java-tron's `{"Error": …}`). */
function errorIn(body: Buffer, member: string | undefined): boolean {
  if (member === undefined || body[0] !== 0x7b) return false;
  const members = scanMembers(body.toString("utf8"));
  return members.length === 1 && (members[0] as ReadonlyMap<string, string>).has(member);
}

/**
 * How long an answer read at the head is served at most: the settings' age and, when that age is the
 * network's (no `headMaxAgeMs` in the config), no more than half the time between the blocks the label's
 * head has been seen to make (a dev chain's blocks may come faster than its network's): a caller sees a
 * head at most one block old. An age the operator set is theirs.
 */
function headMaxAge(settings: LabelCacheSettings, group: UpstreamGroup): number {
  const blockMs = group.served.blockMs;
  return blockMs === undefined || !settings.followsBlocks
    ? settings.headMaxAgeMs
    : Math.min(settings.headMaxAgeMs, blockMs / 2);
}

/** Pieces of text as one Buffer of its own (answer-cache.ts `ownBytes`), each written once. */
function bytesOf(parts: readonly string[]): Buffer {
  let length = 0;
  for (const part of parts) length += Buffer.byteLength(part);
  const bytes = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const part of parts) at += bytes.write(part, at);
  return bytes;
}

/** How long the answer may be kept: until evicted, for its head epoch, or (undefined) not at all. */
function lifetimeOf(
  members: ReadonlyMap<string, string>,
  read: CacheRead,
  group: UpstreamGroup,
  node: Upstream | undefined,
  epoch: number,
): "final" | "head" | undefined {
  const { rules, lifetime } = read;
  const error = members.get("error");
  const result = members.get("result");
  const failed = error !== undefined && error !== "null";
  if (failed || result === undefined) {
    // a node's own answer to a final call, such as a revert, is the same on every node and every time
    return failed && deterministic(error, rules) && isFinal(read, group, undefined, node, epoch)
      ? "final"
      : undefined;
  }
  const empty = result === "null" || result === "[]";
  if (lifetime.kind === "block" && lifetime.block < 0 && result === "null") return undefined;
  // an answer that says its block (a receipt's blockNumber), read once
  const blockIn = lifetime.kind === "blockIn" ? heightAt(result, lifetime.path, rules) : undefined;
  let final = isFinal(read, group, blockIn, node, epoch);
  if (final && rules.changing !== undefined && result.startsWith("{")) {
    const top = scanMembers(result)[0];
    if (top !== undefined && rules.changing.some((member) => top.has(member))) final = false;
  }
  if (final) return "final";
  if (empty) return undefined;
  // an answer that should say its block and does not (a transaction still in the mempool, `blockNumber:
  // null`) changes as soon as a block takes it: not kept at all
  if (lifetime.kind === "blockIn" && blockIn === undefined) return undefined;
  return "head";
}

/**
 * Whether the call's answer can no longer change, by its lifetime and the label's finalized height;
 * `blockIn`, for an answer that says its block, that block's height. Final as the block was when the read
 * went out, in head epoch `epoch`: one that turned final while the node answered may have been read from
 * blocks a reorganisation then replaced, and kept for good the replaced block would be served for good.
 */
function isFinal(
  read: CacheRead,
  group: UpstreamGroup,
  blockIn: number | undefined,
  node: Upstream | undefined,
  epoch: number,
): boolean {
  const { lifetime } = read;
  if (lifetime.kind === "always") return true;
  if (lifetime.kind === "head") return false;
  let finalized = finalizedHeight(read.rules, group, node);
  if (group.served.epoch !== epoch)
    finalized = Math.min(finalized, finalizedAtStart(read.rules, group, epoch));
  if (lifetime.kind === "block") {
    // the genesis block never changes; a block named by hash may be one a reorg replaces, but on a chain
    // whose every block is final at once
    if (lifetime.block === 0) return true;
    if (lifetime.block < 0) return finalAtOnce(read.rules);
    return lifetime.block <= finalized;
  }
  return blockIn !== undefined && blockIn <= finalized;
}

/** The label's finalized height as head epoch `epoch` began; -1 for one long gone. */
function finalizedAtStart(rules: CacheRules, group: UpstreamGroup, epoch: number): number {
  const start = group.served.startOf(epoch);
  const rule = rules.finalized;
  if (start === undefined || rule === undefined) return -1;
  if (!("depth" in rule)) return start.finalized;
  return start.height < 0 ? -1 : start.height - rule.depth;
}

/** Whether every block of the chain is final once made (registry `finalized: {depth: 0}`). */
function finalAtOnce(rules: CacheRules): boolean {
  const rule = rules.finalized;
  return rule !== undefined && "depth" in rule && rule.depth === 0;
}

/**
 * The label's finalized height: a node's word for it, or a depth below the served head; -1 when unknown.
 * Given the node that answered (one of the label's own), that node's word: an answer may say the finality
 * its own node holds (a block's `status`, accepted on L2 until that node saw it settled on L1), and kept
 * for good it must be final there too.
 */
export function finalizedHeight(rules: CacheRules, group: UpstreamGroup, node?: Upstream): number {
  const rule = rules.finalized;
  if (rule === undefined) return -1;
  if ("depth" in rule) {
    if (group.served.height < 0) return -1;
    const served = group.served.height - rule.depth;
    // and as deep below the answering node's own head: a node behind the served head (in rotation within
    // its lag) answers a block at the depth from its own head, which it may yet replace
    const head = node === undefined || !group.members.includes(node) ? undefined : node.health.head;
    return head === undefined ? served : Math.min(served, head - rule.depth);
  }
  // an archive tier's node is another label's: its answers are about blocks long final
  if (node === undefined || !group.members.includes(node)) return group.finalized;
  return Math.min(group.finalized, group.finality.finalizedBy(node));
}

/** The height at `path` in a result, in the finality call's encoding (or a hex quantity, as EVM's are). */
function heightAt(result: string, path: readonly string[], rules: CacheRules): number | undefined {
  let value: unknown;
  try {
    value = JSON.parse(result);
  } catch {
    return undefined;
  }
  for (const member of path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string, unknown>)[member];
  }
  const finalized = rules.finalized;
  const encoding: HeadEncoding =
    finalized === undefined || "depth" in finalized
      ? "hex-quantity"
      : "heightBy" in finalized
        ? finalized.heightBy.encoding
        : finalized.encoding;
  return readHeight(value, encoding);
}

/**
 * Whether a node's head, as far as it is known, is below the head the label served: what it read at its head
 * is older than what callers were served, and is kept for no one but the caller it answered.
 */
export function behindServed(node: Upstream, group: UpstreamGroup): boolean {
  const head = node.health.head;
  return head !== undefined && head < group.served.height;
}

/**
 * Whether `node`'s answer may serve other callers, for a single call, a batch's call and a WebSocket
 * message alike: never a failure (identical calls waiting on it ask again); a final answer always; one read
 * at the head only from a node not below the head the label served (a read that found no node at that head
 * went to one below it; a connection's node may be behind).
 */
export function sharable(kept: KeptAnswer, node: Upstream | undefined, group: UpstreamGroup): boolean {
  if (kept.failure) return false;
  return kept.entry.epoch === FINAL || node === undefined || !behindServed(node, group);
}

/**
 * Whether an answer object is an error not kept as final (a deterministic one is served from the cache as
 * any hit is): a flight lands it `failed` (relay-cached.ts `FlightEntry`). Of errors, only a node's
 * deterministic one (a revert at the head) is shared at all (`sharable`).
 */
export function failedAnswer(members: ReadonlyMap<string, string>, kept: KeptAnswer): boolean {
  const error = members.get("error");
  return error !== undefined && error !== "null" && kept.entry.epoch !== FINAL;
}

/**
 * Keeps a sharable answer as its lifetime allows: in the label's cache, and when final in the shared layer,
 * if it is no larger than the largest entry (`maxEntryBytes`): one that no instance keeps is not deflated
 * and stored in Redis, beside the quotas, for every instance to read there at each call.
 */
export function keepEntry(cache: AnswerCache, group: UpstreamGroup, key: string, entry: CacheEntry): void {
  cache.set(key, entry);
  if (
    entry.epoch === FINAL &&
    cache.shared !== undefined &&
    entry.before.length + entry.after.length <= cache.settings.maxEntryBytes
  )
    cache.shared.put(sharedScope(group), key, entry);
}
