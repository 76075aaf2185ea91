import type { Checked } from "./check.js";
import { arrayElements } from "./scan.js";

/**
 * A partial batch's answers in the order of its calls: one place for each call that gets an answer (a
 * notification gets none), holding the gateway's refusal of that call, or undefined where the node's answer
 * to it goes. A node answers a batch in the order of its calls, and clients that read the answers by
 * position rather than by id (docs/errors.md names one) must find each in its call's place, not the
 * refusals after them all.
 */
export type BatchLayout = readonly (string | undefined)[];

/** The layout of a batch's `calls` in order: the refusal's answer of each refused call, undefined for one that went. */
export function batchLayout(calls: readonly Checked[]): BatchLayout {
  const layout: (string | undefined)[] = [];
  for (const call of calls)
    if (!call.ok) {
      if (!call.notification) layout.push(call.json);
    } else if (call.id !== undefined) layout.push(undefined);
  return layout;
}

/** Whether a layout holds a refusal: the batch is partial. */
export function hasRefusals(layout: BatchLayout): boolean {
  return layout.some((place) => place !== undefined);
}

/** The layout's refusals alone, in order: the answer to a batch none of whose other calls is answered. */
export function refusalsOf(layout: BatchLayout): string[] {
  return layout.filter((place): place is string => place !== undefined);
}

/**
 * `answers` (the node's, in the order of the calls that went) in the places the layout leaves them, the
 * refusals in theirs; answers beyond those places (a node that answered more) follow, and a place the node
 * left without an answer is left out.
 */
export function inPlaces<T>(layout: BatchLayout, answers: readonly T[], refusal: (text: string) => T): T[] {
  const placed: T[] = [];
  let next = 0;
  for (const place of layout) {
    if (place !== undefined) placed.push(refusal(place));
    else if (next < answers.length) placed.push(answers[next++] as T);
  }
  for (; next < answers.length; next++) placed.push(answers[next] as T);
  return placed;
}

/**
 * A partial batch's answer: the node's array of answers to the calls that passed, with the gateway's
 * refusals of the others in their places. Undefined when the node did not answer with an array (it refused
 * the batch as a whole), in which case its answer goes to the client as it is.
 */
export function mergeBatchAnswer(answer: string, layout: BatchLayout): string | undefined {
  const trimmed = answer.trim();
  if (!trimmed.endsWith("]")) return undefined;
  const answers = arrayElements(trimmed);
  if (answers === undefined) return undefined;
  return `[${inPlaces(layout, answers, (text) => text).join(",")}]`;
}

/**
 * The client's answer to a partial batch, from the node's answer at `statusCode` to the calls that went:
 * the refusals alone when only notifications went (a node answers those with no body, JSON-RPC 2.0 §6),
 * else merged into its array at 200; undefined when the node's answer goes to the client as it is.
 */
export function partialBatchAnswer(
  statusCode: number,
  answer: string,
  layout: BatchLayout,
): string | undefined {
  if (answer.trim() === "" && statusCode < 300) return `[${refusalsOf(layout).join(",")}]`;
  return statusCode === 200 ? mergeBatchAnswer(answer, layout) : undefined;
}
