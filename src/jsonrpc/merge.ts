/**
 * A partial batch's answer: the node's array of answers to the calls that passed, with the gateway's
 * refusals of the others appended. Undefined when the node did not answer with an array (it refused the
 * batch as a whole), in which case its answer goes to the client as it is.
 */
export function mergeBatchAnswer(answer: string, refusals: readonly string[]): string | undefined {
  const trimmed = answer.trim();
  if (!trimmed.startsWith("[") || !trimmed.endsWith("]")) return undefined;
  const inner = trimmed.slice(1, -1).trim();
  return `[${inner}${inner === "" ? "" : ","}${refusals.join(",")}]`;
}
