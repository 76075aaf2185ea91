import type { PassedCall } from "../jsonrpc/check.js";
import type { HeadCall, HeadEncoding, ReadRules } from "../registry/types.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { readHeight } from "../upstream/head.js";
import type { UpstreamCall } from "../upstream/policy.js";
import type { Upstream } from "../upstream/upstreams.js";
import { type HeightInAnswer, readNeed } from "./read-need.js";

/**
 * Whether a call's answers show a height (read-need.ts) that anything would use. Its answer streams through
 * as any other, and is read once it has gone out (upstream/policy.ts RelayRun.read): holding it back until
 * it was read cost the one-process check a tenth of its throughput (bench/ab.ts, 2026-11-26). A label with
 * one node, no other instance to tell and no answers kept at the head has no other node to hold back: its
 * answers are not read, and its served head is the prober's. One whose cache keeps answers read at the
 * head reads them: an answer that shows a newer block ends those (its caller saw a receipt in block N+1,
 * and its next eth_blockNumber is not N from the cache).
 */
export function showsHeight(call: UpstreamCall): boolean {
  if (call.reads === undefined || call.reads.learn.length === 0) return false;
  return readsHeights(call.group);
}

/** Whether the heights answers show would change anything for the label (showsHeight). */
export function readsHeights(group: UpstreamGroup): boolean {
  return (
    group.members.length > 1 ||
    group.served.onRise !== undefined ||
    group.cache?.settings.headRelative === true
  );
}

/**
 * Tells the label's group the heights a node's answer to a WebSocket connection's calls shows, as an HTTP
 * answer's are (learnHeights): a connection's node may be a block past the head the label served, and the
 * answer it gave (the head, a receipt in that block) is the caller's, over HTTP too, and what the cache
 * may keep. Without it a dApp on both transports read the head back a block over HTTP, and a head kept
 * from the socket's answer was served beside the older block (test/answers/socket-heights.test.ts).
 */
export function learnSocketHeights(
  group: UpstreamGroup,
  reads: ReadRules | undefined,
  head: HeadCall,
  calls: readonly PassedCall[],
  single: boolean,
  upstream: Upstream,
  text: string,
): void {
  if (calls.length === 0 || !readsHeights(group)) return;
  const learn = readNeed(reads, head, calls, single)?.learn;
  if (learn !== undefined) learnHeightsOf(group, learn, upstream, text);
}

/**
 * Runs `go` once a head rise on its way to the other instances has reached them (served-head.ts `sharing`),
 * at once when none is. An answer read whole that showed a new head (or any read while one is shared) goes
 * out then, as a streamed one does (upstream/policy.ts `RelayRun.read`): its caller's next call, to another
 * instance, must not find that instance not yet told. What `go` throws then goes to `failed`, the request's
 * error boundary.
 */
export function whenShared(group: UpstreamGroup, go: () => void, failed: (bug: unknown) => void): void {
  const sharing = group.served.sharing;
  if (sharing === undefined) go();
  else sharing.then(go).catch(failed);
}

/**
 * Tells the label's group each height the answer shows, so the node's head and the label's served head
 * rise to them. An answer that is not JSON, or that holds an error where a
 * height would be, shows nothing.
 */
export function learnHeights(call: UpstreamCall, upstream: Upstream, text: string): void {
  if (call.reads !== undefined) learnHeightsOf(call.group, call.reads.learn, upstream, text);
}

function learnHeightsOf(
  group: UpstreamGroup,
  learn: readonly HeightInAnswer[],
  upstream: Upstream,
  text: string,
): void {
  if (learn.length === 0) return;
  const only = learn[0] as HeightInAnswer;
  if (learn.length === 1 && only.id === undefined && only.path.length === 1 && only.path[0] === "result") {
    const flat = FLAT_RESULT[only.encoding].exec(text);
    if (flat !== null) {
      const height = readHeight(only.encoding === "integer" ? Number(flat[1]) : flat[1], only.encoding);
      if (height !== undefined) group.answeredHeight(upstream, height, only.isHead);
      if (height !== undefined && only.isFinal === true) group.finality.finalAnswered(upstream, height);
      return;
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return;
  }
  // A batch's answers, each found by its id once; the node is told its highest head answer and its
  // highest other height once each, not once per call (heights only rise, and one node gave them all).
  const elements = Array.isArray(parsed) ? byId(parsed) : undefined;
  let head = -1;
  let other = -1;
  for (const rule of learn) {
    const answer = rule.id === undefined ? parsed : elements?.get(idValue(rule.id));
    const height = heightIn(answer, rule);
    if (height === undefined) continue;
    if (rule.isHead) head = Math.max(head, height);
    else other = Math.max(other, height);
    if (rule.isFinal === true) group.finality.finalAnswered(upstream, height);
  }
  if (head >= 0) group.answeredHeight(upstream, head, true);
  if (other >= 0) group.answeredHeight(upstream, other, false);
}

/**
 * The common answer to one call, `{"jsonrpc":"2.0","id":1,"result":"0x1b4"}`, read without JSON.parse, at
 * about a third of its cost (0.15 against 0.5 µs per answer in a loop). Anchored at both ends, with an id
 * that cannot hold a quote, so it matches only text whose one `result` member JSON.parse reads the same
 * (test/answers/examined.test.ts); anything else takes JSON.parse.
 */
const FLAT_RESULT: Readonly<Record<HeadEncoding, RegExp>> = {
  "hex-quantity": /^\{"jsonrpc":"2\.0","id":(?:-?\d+|"[^"\\]*"|null),"result":"(0x[0-9a-fA-F]+)"\}\s*$/,
  integer: /^\{"jsonrpc":"2\.0","id":(?:-?\d+|"[^"\\]*"|null),"result":(\d+)\}\s*$/,
  "decimal-string": /^\{"jsonrpc":"2\.0","id":(?:-?\d+|"[^"\\]*"|null),"result":"(\d+)"\}\s*$/,
};

function heightIn(answer: unknown, rule: HeightInAnswer): number | undefined {
  // a block still being built (registry `heightUnless`): no node has it yet
  const { unless } = rule;
  if (unless !== undefined) {
    const said = memberAt(answer, unless.path);
    if (typeof said === "string" && unless.values.includes(said)) return undefined;
  }
  const value = memberAt(answer, rule.path);
  // a JSON number is a height whatever the dialect writes its blocks in (Substrate's system_syncState
  // answers currentBlock as one, where its headers number blocks in hex)
  return readHeight(value, typeof value === "number" ? "integer" : rule.encoding);
}

function memberAt(answer: unknown, path: readonly string[]): unknown {
  let value: unknown = answer;
  for (const member of path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string, unknown>)[member];
  }
  return value;
}

/** A batch answer's elements by their ids (the first of two with one id, as a search from the start finds). */
function byId(elements: readonly unknown[]): Map<unknown, unknown> {
  const found = new Map<unknown, unknown>();
  for (const element of elements) {
    const id = (element as { id?: unknown } | null)?.id;
    if (!found.has(id)) found.set(id, element);
  }
  return found;
}

/** A call's id as the answer's JSON reads it, from its source text; a symbol no answer's id equals when it is not JSON. */
function idValue(id: string): unknown {
  try {
    return JSON.parse(id);
  } catch {
    return NO_ID;
  }
}

const NO_ID = Symbol("no id");
