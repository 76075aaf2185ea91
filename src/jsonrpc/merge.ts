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

/**
 * The client's answer to a partial batch, from the node's answer at `statusCode` to the calls that went:
 * the refusals alone when only notifications went (a node answers those with no body, JSON-RPC 2.0 §6),
 * else merged into its array at 200; undefined when the node's answer goes to the client as it is.
 */
export function partialBatchAnswer(
  statusCode: number,
  answer: string,
  refusals: readonly string[],
): string | undefined {
  if (answer.trim() === "" && statusCode < 300) return `[${refusals.join(",")}]`;
  return statusCode === 200 ? mergeBatchAnswer(answer, refusals) : undefined;
}
