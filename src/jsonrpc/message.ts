import { GatewayError } from "../errors/table.js";
import { type CallRules, type Checked, checkCall, idOf, isLegacyCall, no } from "./check.js";
import { parseJsonRpcBody } from "./scan.js";

/** A JSON-RPC message (one call or a batch) as stage 4 leaves it: every call checked, in order. */
export interface CheckedMessage {
  readonly batch: boolean;
  readonly checked: readonly Checked[];
  /** What the rate-limit stage charges for it: one per call, refused ones included. */
  readonly cost: number;
  /** The id a later refusal answers with: a single call's own id token, else "null". */
  readonly replyId: string;
  /** A single call framed as JSON-RPC 1.0 on a dialect that answers it so: a later refusal takes 1.0's shape. */
  readonly legacy: boolean;
}

/**
 * Stage 4 for a JSON-RPC message, over HTTP and over WebSocket alike: parses it (depth, duplicate members,
 * the envelope), applies the batch rules, and checks each call against the dialect's allow-list. A call
 * that fails its checks is an answer, not a failure: it gets its own error object in the answer.
 */
export function checkMessage(
  text: string,
  rules: CallRules,
  limits: { readonly maxBatch: number; readonly maxJsonDepth: number },
): CheckedMessage {
  const parsed = parseJsonRpcBody(text, limits.maxJsonDepth);
  const { calls } = parsed;
  if (parsed.batch) {
    if (!rules.policy.batch) throw new GatewayError("BATCH_NOT_SUPPORTED");
    if (calls.length === 0) throw new GatewayError("EMPTY_BATCH");
    if (calls.length > limits.maxBatch)
      throw new GatewayError("BATCH_TOO_LARGE", { maxBatch: limits.maxBatch });
  }
  const only = parsed.batch ? undefined : calls[0];
  const checked = calls.map((call) => checkCall(rules, call));
  // a range call that cannot be split, or a filter's use, is judged here, so that it is refused alone
  if (rules.callRefusal !== undefined && (parsed.batch || rules.transport === "websocket"))
    for (const [i, call] of checked.entries()) {
      const refusal = call.ok ? rules.callRefusal(call) : undefined;
      if (call.ok && refusal !== undefined) checked[i] = no(rules, refusal.code, call.call, refusal.detail);
    }
  return {
    batch: parsed.batch,
    checked,
    cost: calls.length,
    replyId: only === undefined ? "null" : idOf(only),
    legacy: only !== undefined && rules.policy.legacyReplies && isLegacyCall(only),
  };
}
