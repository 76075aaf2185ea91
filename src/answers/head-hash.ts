import type { ServerResponse } from "node:http";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import type { UpstreamFields } from "../upstream/call-run.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";
import { sendWhole } from "./by-hash.js";

/**
 * 7, for a call whose answer is the node's head block's hash and no height (registry `headHashes`:
 * `getbestblockhash`), on a label with more than one node and a prober: read whole, and when it names a hash
 * the label has not answered before, held while that node's head is read (the prober's `readHead`), so that
 * the label has served that head before the hash goes out. A node a block ahead of its last probe gives the
 * new tip's hash; without the hold, the caller's next `getblockcount` could go to a node the probes still
 * showed at the same height, and answer the head before. Once per block, and one read for every caller that
 * gets the same new hash meanwhile.
 */
export function relayHeadHash(
  call: UpstreamCall,
  res: ServerResponse,
  note: UpstreamFields,
  done: RelayDone,
): void {
  fetchWhole(call, res, note, (error, answer) => {
    if (error !== undefined || answer === undefined) return done(error);
    const read = answer.statusCode === 200 ? headRead(call.group, answer) : undefined;
    if (read === undefined) {
      sendWhole(res, answer);
      done();
      return;
    }
    read.then(() => {
      sendWhole(res, answer);
      done();
    });
  });
}

/** The head read a new hash waits for; undefined for the hash answered last, or an answer without one. */
function headRead(group: UpstreamGroup, answer: WholeAnswer): Promise<void> | undefined {
  const hash = resultText(answer.body);
  const last = group.headHash;
  if (hash === undefined || group.readHead === undefined) return undefined;
  if (last?.hash === hash) return last.read;
  const read = group.readHead(answer.upstream);
  group.headHash = { hash, read };
  return read;
}

/** The answer's `result` when it is a string; undefined for an error or anything else. */
function resultText(body: Buffer): string | undefined {
  try {
    const { result } = JSON.parse(body.toString("utf8")) as { result?: unknown };
    return typeof result === "string" ? result : undefined;
  } catch {
    return undefined;
  }
}
