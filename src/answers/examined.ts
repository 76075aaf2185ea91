import type { ServerResponse } from "node:http";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import type { UpstreamFields } from "../upstream/call-run.js";
import { decode } from "../upstream/head.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";
import type { HeightInAnswer } from "./read-need.js";

/**
 * 7, for a call whose answer shows a height (read-need.ts): read whole, its heights told to the label's
 * group (the node's head and the label's served head rise to them), then sent. A head call answered below
 * the head the label had served when the call was planned is asked once more: that node's head is now
 * known to be lower, so the second ask goes to a node that has reached it, or waits for one.
 */
export function relayExamined(
  call: UpstreamCall,
  res: ServerResponse,
  note: UpstreamFields,
  done: RelayDone,
): void {
  let asked = 0;
  const ask = (): void => {
    asked++;
    fetchWhole(call, res, note, (error, answer) => {
      if (error !== undefined || answer === undefined) return done(error);
      const text = answer.body.toString("utf8");
      const lowestHead = answer.statusCode === 200 ? learnHeights(call, answer, text) : undefined;
      if (lowestHead !== undefined && lowestHead < call.atLeast && asked === 1) return ask();
      // The node's answer as it sent it, bytes and describing headers, as the streaming relay would have.
      res.writeHead(answer.statusCode, answer.headers as string[]);
      res.end(answer.body);
      done();
    });
  };
  ask();
}

/**
 * Tells the group each height the answer shows, and returns the lowest head a head call answered (or
 * undefined). An answer that is not JSON, or that holds an error where a height would be, shows nothing.
 */
export function learnHeights(call: UpstreamCall, answer: WholeAnswer, text: string): number | undefined {
  const learn = call.reads?.learn;
  if (learn === undefined || learn.length === 0) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  let lowestHead: number | undefined;
  for (const rule of learn) {
    const height = heightIn(parsed, rule);
    if (height === undefined) continue;
    call.group.answeredHeight(answer.upstream, height, rule.isHead);
    if (rule.isHead && (lowestHead === undefined || height < lowestHead)) lowestHead = height;
  }
  return lowestHead;
}

function heightIn(parsed: unknown, rule: HeightInAnswer): number | undefined {
  let value: unknown = rule.id === undefined ? parsed : answerWithId(parsed, rule.id);
  for (const member of rule.path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string, unknown>)[member];
  }
  try {
    return decode(value, rule.encoding, rule.path.join("."));
  } catch {
    return undefined;
  }
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
