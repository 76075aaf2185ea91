import type { PassedCall } from "../jsonrpc/check.js";
import type { WholeAnswer } from "../upstream/buffered-answer.js";

// A batch's answers, read whole, in which some calls' answers are replaced by another node's (archive.ts,
// by-hash.ts). Answers are matched to calls by id, as JSON-RPC 2.0 matches them.

/** A batch's answers, when the node answered 200 with a JSON array. */
export function batchAnswers(answer: WholeAnswer): unknown[] | undefined {
  if (answer.statusCode !== 200) return undefined;
  try {
    const parsed = JSON.parse(answer.body.toString("utf8")) as unknown;
    return Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The answer to `call` among a batch's answers. */
export function answerTo(answers: readonly unknown[], call: PassedCall): unknown {
  return answers.find((answer) => sameId(answer, call));
}

/** Puts `by` in the place of the answer to `call`. */
export function replaceAnswer(answers: unknown[], call: PassedCall, by: unknown): void {
  const at = answers.findIndex((answer) => sameId(answer, call));
  if (at >= 0) answers[at] = by;
}

/** The calls as one batch to send on. */
export function batchOf(calls: readonly PassedCall[]): string {
  return `[${calls.map((call) => call.json).join(",")}]`;
}

function sameId(answer: unknown, call: PassedCall): boolean {
  if (call.id === undefined || typeof answer !== "object" || answer === null) return false;
  try {
    return (answer as { id?: unknown }).id === JSON.parse(call.id);
  } catch {
    return false;
  }
}
