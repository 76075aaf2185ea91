import type { ServerResponse } from "node:http";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import type { UpstreamFields } from "../upstream/call-run.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";

/**
 * 7, for a read that names a block by hash on a label with more than one node: read whole, and when the node
 * answers `null` (it has not seen that block yet, or is on a fork that does not have it), asked once more
 * of another node of the label, whose answer the caller gets. A caller that got a block hash from one node
 * then finds that block through the gateway, whichever node its next call lands on.
 */
export function relayByHash(
  call: UpstreamCall,
  res: ServerResponse,
  note: UpstreamFields,
  done: RelayDone,
): void {
  fetchWhole(call, res, note, (error, first) => {
    if (error !== undefined || first === undefined) {
      done(error);
      return;
    }
    if (!answeredNull(first)) {
      send(res, first);
      done();
      return;
    }
    call.group.answers.add("by_hash_again");
    fetchWhole({ ...call, byHash: false, exclude: first.upstream }, res, note, (again, second) => {
      // no other node to ask, or it failed: the first node's null is still an answer
      send(res, again === undefined && second !== undefined ? second : first);
      done();
    });
  });
}

/** Whether a JSON-RPC answer's result is null. */
function answeredNull(answer: WholeAnswer): boolean {
  if (answer.statusCode !== 200) return false;
  try {
    const parsed = JSON.parse(answer.body.toString("utf8")) as { result?: unknown };
    return parsed !== null && typeof parsed === "object" && "result" in parsed && parsed.result === null;
  } catch {
    return false;
  }
}

function send(res: ServerResponse, answer: WholeAnswer): void {
  if (res.headersSent) return;
  res.writeHead(answer.statusCode, answer.headers as string[]);
  res.end(answer.body);
}
