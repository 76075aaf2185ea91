import type { BodyTest, NodeErrors } from "../registry/types.js";

/**
 * Whether an answer at the interface's error status (`rules.status`), read whole, is the node's own answer
 * to the call (a JSON-RPC error of bitcoind, a tonlib error of ton-http-api, a protocol error of Octez):
 * relayed as it came and not counted against the node. A body that is not JSON, does not pass the rule's
 * `answer` test, or passes its `unavailable` one (the node saying it cannot serve yet) is a failure.
 */
export function isNodesAnswer(body: Buffer | string, rules: NodeErrors): boolean {
  let answer: unknown;
  try {
    answer = JSON.parse(typeof body === "string" ? body : body.toString("utf8"));
  } catch {
    return false;
  }
  return (
    passes(answer, rules.answer) && (rules.unavailable === undefined || !passes(answer, rules.unavailable))
  );
}

/**
 * Whether an answer at one of the rules' `unavailableAt` statuses, read whole, is the node saying it cannot
 * serve: a batch's answer when each of its calls' says so (bitcoind warming up answers a batch at 200, its
 * error in every call's place).
 */
export function saysUnavailable(body: Buffer | string, rules: NodeErrors): boolean {
  const test = rules.unavailable;
  if (test === undefined) return false;
  const text = typeof body === "string" ? body : body.toString("utf8");
  // an answer without the member's name (every result) says nothing of it: no parse
  if (!text.includes(`"${test.member[test.member.length - 1]}"`)) return false;
  try {
    const answer: unknown = JSON.parse(text);
    if (!Array.isArray(answer)) return passes(answer, test);
    return answer.length > 0 && answer.every((one) => passes(one, test));
  } catch {
    return false;
  }
}

/** Whether `answer` (parsed JSON) passes `test`: its member at `test.member` is as the test says. */
export function passes(answer: unknown, test: BodyTest): boolean {
  let value: unknown = answer;
  for (const key of test.member) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, key)) return false;
    value = (value as Record<string, unknown>)[key];
  }
  if (test.is !== undefined) return value === test.is;
  if (test.type !== undefined)
    return test.type === "object" ? typeof value === "object" && value !== null : typeof value === test.type;
  if (test.matches !== undefined) return typeof value === "string" && test.matches.test(value);
  if (test.in !== undefined) return (test.in as readonly unknown[]).includes(value);
  return false;
}
