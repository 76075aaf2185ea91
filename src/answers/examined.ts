import type { HeadEncoding } from "../registry/types.js";
import { readHeight } from "../upstream/head.js";
import type { UpstreamCall } from "../upstream/policy.js";
import type { Upstream } from "../upstream/upstreams.js";
import type { HeightInAnswer } from "./read-need.js";

/**
 * Whether a call's answers show a height (read-need.ts) that anything would use. Its answer streams through
 * as any other, and is read once it has gone out (upstream/policy.ts RelayRun.read): holding it back until
 * it was read cost the one-process check a tenth of its throughput (bench/ab.ts, 2026-11-26). A label with
 * one node and no other instance to tell has no other node to hold back: its answers are not read, and its
 * served head is the prober's.
 */
export function showsHeight(call: UpstreamCall): boolean {
  if (call.reads === undefined || call.reads.learn.length === 0) return false;
  const { group } = call;
  return group.members.length > 1 || group.served.onRise !== undefined;
}

/**
 * Tells the label's group each height the answer shows, so the node's head and the label's served head
 * rise to them. An answer that is not JSON, or that holds an error where a
 * height would be, shows nothing.
 */
export function learnHeights(call: UpstreamCall, upstream: Upstream, text: string): void {
  const learn = call.reads?.learn;
  if (learn === undefined || learn.length === 0) return;
  const only = learn[0] as HeightInAnswer;
  if (learn.length === 1 && only.id === undefined && only.path.length === 1 && only.path[0] === "result") {
    const flat = FLAT_RESULT[only.encoding].exec(text);
    if (flat !== null) {
      const height = readHeight(only.encoding === "integer" ? Number(flat[1]) : flat[1], only.encoding);
      if (height !== undefined) call.group.answeredHeight(upstream, height, only.isHead);
      return;
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return;
  }
  for (const rule of learn) {
    const height = heightIn(parsed, rule);
    if (height !== undefined) call.group.answeredHeight(upstream, height, rule.isHead);
  }
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

function heightIn(parsed: unknown, rule: HeightInAnswer): number | undefined {
  let value: unknown = rule.id === undefined ? parsed : answerWithId(parsed, rule.id);
  for (const member of rule.path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string, unknown>)[member];
  }
  return readHeight(value, rule.encoding);
}

/** A batch answer's element for the call whose id is `id` (its source text). */
function answerWithId(parsed: unknown, id: string): unknown {
  if (!Array.isArray(parsed)) return undefined;
  let wanted: unknown;
  try {
    wanted = JSON.parse(id);
  } catch {
    return undefined;
  }
  return parsed.find((element) => (element as { id?: unknown } | null)?.id === wanted);
}
