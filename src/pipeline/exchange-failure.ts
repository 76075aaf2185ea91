import type { IncomingMessage, ServerResponse } from "node:http";
import { batchErrorBody, type ErrorStyle, sendError, sendJson } from "../errors/respond.js";
import type { ErrorCode, GatewayError } from "../errors/table.js";
import type { Authorized } from "../families/family.js";
import { unreadBodyTooLarge } from "../http/body.js";
import { clientGone } from "../http/client-gone.js";
import { requestIdOf } from "../http/request-id.js";
import type { AccessLine } from "../log.js";

/**
 * Refusals of a valid key made from the request's head before its body is read: stage 2's, and stage
 * 3's of its path (a path the dialect has not, an interface of the dedicated plan). Not UNAUTHORIZED: a
 * caller without a key is answered at once, and no body is buffered for it.
 */
export const ADMISSION_REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "NETWORK_FORBIDDEN",
  "KEY_SETTING_REFUSED",
  "JWT_REQUIRED",
  "NOT_FOUND",
  "DEDICATED_ONLY_INTERFACE",
]);

/**
 * The answer of an HTTP exchange (http.ts) that failed, in its style, noted on its access line: none to a
 * caller that left or a connection that was cut (`cutBy` says who cut it), a cut connection for a bug once
 * the answer began, and a batch's error once per call.
 */
export function answerFailure(
  error: GatewayError,
  replyId: string,
  req: IncomingMessage,
  res: ServerResponse,
  access: AccessLine,
  cutBy: ErrorCode,
  bodyLimit: number,
  batch: Authorized | undefined,
  style: ErrorStyle,
): void {
  if (res.headersSent && error.code === "INTERNAL") {
    access.error = "INTERNAL";
    res.destroy();
    return;
  }
  // Once the status line is out the relay has told a client that left from a connection it cut itself.
  const closed = error.code === "CLIENT_CLOSED" || (!res.headersSent && clientGone(res));
  access.error = closed ? cutBy : error.code;
  if (closed) return;
  if (error.code === "BODY_TOO_LARGE" || unreadBodyTooLarge(req, bodyLimit)) res.shouldKeepAlive = false;
  if (batch !== undefined && !res.headersSent) {
    // A batch's clients (ethers, viem) read an array by id: each call gets the error, the refused ones
    // their own refusals, with the status and headers (Retry-After) of the error.
    const body = batchErrorBody(
      error,
      batch.batchIds ?? [],
      batch.batchRefusals ?? [],
      requestIdOf(res),
      style,
      batch.batchLegacy,
    );
    sendJson(res, error.status, body, error.headers);
    return;
  }
  sendError(res, error, style, replyId);
}
