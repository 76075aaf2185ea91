import type { PassedCall } from "../jsonrpc/check.js";
import { idKey } from "../jsonrpc/id-key.js";
import { arrayElements, scanMembers } from "../jsonrpc/scan.js";
import type { WholeAnswer } from "../upstream/buffered-answer.js";

// A batch's answers, read whole, in which some calls' answers are replaced by another node's (archive.ts,
// by-hash.ts). Answers are matched to calls by id, as JSON-RPC 2.0 matches them: by the id's source text
// (id-key.ts), so that an integer id past 2^53 matches, and each answer goes out as the node wrote it.

/** One answer of a batch: as the node wrote it, its id's key, and its value for what it says. */
export interface BatchAnswer {
  readonly text: string;
  /** The key of its id as written (id-key.ts); undefined when it has none. */
  readonly id: string | undefined;
  readonly value: unknown;
}

/** A batch's answers, when the node answered 200 with a JSON array. */
export function batchAnswers(answer: WholeAnswer): BatchAnswer[] | undefined {
  if (answer.statusCode !== 200) return undefined;
  const text = answer.body.toString("utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const elements = Array.isArray(parsed) ? arrayElements(text) : undefined;
  if (elements === undefined || elements.length !== (parsed as unknown[]).length) return undefined;
  return elements.map((element, i) => answerOf(element, (parsed as unknown[])[i]));
}

/** An answer from its text (the gateway's own refusal, or a node's answer); `value`, when parsed already. */
export function answerOf(text: string, value: unknown = JSON.parse(text)): BatchAnswer {
  const id = text.startsWith("{") ? scanMembers(text)[0]?.get("id") : undefined;
  return { text, id: id === undefined ? undefined : idKey(id), value };
}

/** The answer to `call` among a batch's answers. */
export function answerTo(answers: readonly BatchAnswer[], call: PassedCall): BatchAnswer | undefined {
  if (call.id === undefined) return undefined;
  const id = idKey(call.id);
  return answers.find((answer) => answer.id === id);
}

/** Puts `by` in the place of the answer to `call`. */
export function replaceAnswer(answers: BatchAnswer[], call: PassedCall, by: BatchAnswer): void {
  const at = answerTo(answers, call);
  if (at !== undefined) answers[answers.indexOf(at)] = by;
}

/** The answers as one JSON array, each as its node (or the gateway) wrote it. */
export function batchText(answers: readonly BatchAnswer[]): string {
  return `[${answers.map((answer) => answer.text).join(",")}]`;
}

/** The calls as one batch to send on. */
export function batchOf(calls: readonly PassedCall[]): string {
  return `[${calls.map((call) => call.json).join(",")}]`;
}
