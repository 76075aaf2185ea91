import { GatewayError } from "../errors/table.js";

/**
 * What a failure says about its node, for the health record (health.ts): `refused` is a connection that
 * could not be made (refused, unreachable, no address, or no connection within the connect timeout),
 * proof at once that the node is down and that the request never reached it; `reset` a connection cut
 * before an answer; `timeout` an answer that did not come in time; `status` an answer that says the node
 * failed (a 5xx, a 429, or an error object from the prober's call).
 */
export type FailureKind = "refused" | "reset" | "timeout" | "status";

// The request cannot have reached the node: the only failures after which a write is sent again.
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "EAI_AGAIN",
]);
const RESET = new Set(["ECONNRESET", "UND_ERR_SOCKET", "EPIPE", "UND_ERR_CLOSED"]);
const TIMEOUT = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "ETIMEDOUT"]);
// undici refused the request the gateway built (a header it cannot send, say) before any byte left: the
// gateway's fault, which says nothing of the node and is no answer of its
const NOT_BUILT = new Set(["UND_ERR_INVALID_ARG", "UND_ERR_NOT_SUPPORTED"]);

/**
 * The one classification of a failed request, over HTTP (undici's error codes) and WebSocket opens (the
 * socket's errno codes, and the gateway's own deadlines, which carry ETIMEDOUT): undefined when the
 * failure says nothing about the node (the caller left, an answer over its cap).
 */
export function failureKind(error: Error): FailureKind | undefined {
  if (error instanceof GatewayError) return undefined;
  const code = errorCode(error);
  if (NOT_SENT.has(code)) return "refused";
  if (RESET.has(code)) return "reset";
  if (TIMEOUT.has(code)) return "timeout";
  return undefined;
}

/** A deadline of the gateway's own (a probe's, a WebSocket open's), classified as a timeout. */
export function deadlineError(message: string): Error {
  return Object.assign(new Error(message), { code: "ETIMEDOUT" });
}

/** An upstream failure as the caller sees it; a GatewayError is already one. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  const code = errorCode(error);
  if (TIMEOUT.has(code)) return new GatewayError("UPSTREAM_TIMEOUT");
  if (NOT_SENT.has(code)) return unreached();
  if (NOT_BUILT.has(code)) return new GatewayError("INTERNAL");
  return new GatewayError("UPSTREAM_BAD_RESPONSE");
}

/** No node tried took the request: over HTTP, and a WebSocket's call asked over HTTP (ws/archive-reads.ts). */
export function unreached(): GatewayError {
  return new GatewayError("NO_UPSTREAM", { reason: "no upstream tried could be reached" });
}

/** Whether the request was refused by the gateway's own HTTP client, so never sent (a write too). */
export function notBuilt(error: unknown): boolean {
  return NOT_BUILT.has(errorCode(error));
}

/** A failure for the health record and the operator: its code and message, which carry no credentials. */
export function describeFailure(error: unknown): string {
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return code === "" ? message : `${code} ${message}`;
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "";
}
