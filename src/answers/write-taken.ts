import { scanMembers } from "../jsonrpc/scan.js";

/**
 * Whether a node's answer to a write says it took it: a 2xx whose calls are not all errors (a JSON-RPC
 * `error` that is not null). A write the node refused changed nothing, so what was read at the head stands
 * (upstream/group.ts `wrote`): anyone could otherwise end every caller's cached head answers with a write
 * no node would take.
 */
export function writeTaken(statusCode: number, body: Buffer): boolean {
  if (statusCode < 200 || statusCode >= 300) return false;
  const envelopes = scanMembers(body.toString("utf8"));
  if (envelopes.length === 0) return true;
  return envelopes.some((members) => {
    const error = members.get("error");
    return error === undefined || error === "null";
  });
}
