import { idKey } from "../jsonrpc/id-key.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { BodyTest } from "../registry/types.js";
import { passes } from "../upstream/node-errors.js";

/**
 * Whether a node's answer to a write says it took it: a 2xx in which a write's answer is no error (a
 * JSON-RPC `error` that is not null) and passes none of `refusals`, the interface's ways of refusing at a
 * success status (registry `refusedWrite`); in a batch, only the answers to `writeIds`, its writes, count. A
 * write the node refused changed nothing, so what was read at the head stands (upstream/group.ts `wrote`):
 * anyone could otherwise end every caller's cached head answers with a write no node would take. An answer
 * that names none of them (a write sent as a notification has none) is taken.
 */
export function writeTaken(
  statusCode: number,
  body: Buffer,
  writeIds?: readonly string[],
  refusals?: readonly BodyTest[],
): boolean {
  if (statusCode < 200 || statusCode >= 300) return false;
  const envelopes = scanMembers(body.toString("utf8"));
  const keys = writeIds === undefined ? undefined : new Set(writeIds.map(idKey));
  const answers = envelopes.filter((members) => {
    const id = members.get("id");
    return keys === undefined || (id !== undefined && keys.has(idKey(id)));
  });
  // none names a write: taken unless the node refused the message whole (an error with `"id": null`, as
  // anvil answers a batch holding an id it cannot read)
  if (answers.length === 0)
    return !envelopes.some((members) => isError(members) && members.get("id") === "null");
  return answers.some((members) => answerTakes(members, refusals));
}

/** Whether one answer's members (an envelope's, a REST body's) say its node took the write. */
export function answerTakes(
  members: ReadonlyMap<string, string>,
  refusals: readonly BodyTest[] | undefined,
): boolean {
  if (isError(members)) return false;
  return refusals === undefined || !refusals.some((test) => refusedBy(members, test));
}

function refusedBy(members: ReadonlyMap<string, string>, test: BodyTest): boolean {
  const first = test.member[0] as string;
  const text = members.get(first);
  if (text === undefined) return false;
  try {
    return passes({ [first]: JSON.parse(text) }, test);
  } catch {
    return false;
  }
}

function isError(members: ReadonlyMap<string, string>): boolean {
  const error = members.get("error");
  return error !== undefined && error !== "null";
}
