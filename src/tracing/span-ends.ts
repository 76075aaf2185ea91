import { type Span, SpanStatusCode } from "@opentelemetry/api";
import type { ErrorCode } from "../errors/table.js";
import { resultOf } from "../metrics/gateway-metrics.js";
import * as A from "./attributes.js";

// How the data plane ends the spans it holds (an attempt's, a WebSocket message's). Apart from tracing.ts,
// which loads the SDK: these run in modules every request passes through, and need the API alone.

/** How an attempt on a node came about, and how it ended: the metrics' words (gateway_upstream_attempts_total). */
export type AttemptKind = "first" | "retry" | "hedge";
export type AttemptOutcome = "answered" | "failed" | "dismissed";

/**
 * Ends a WebSocket message's span: its method as the metrics count it (`batch` for a batch), and the
 * gateway's error code when the gateway answered it; a message the node answered ends when its last call's
 * answer arrives.
 */
export function endMessage(
  span: Span | undefined,
  label: string,
  method: string,
  code: string | undefined,
): void {
  if (span === undefined) return;
  span.updateName(`${label} ${method}`);
  span.setAttribute(A.METHOD, method);
  span.setAttribute(A.RESULT, resultOf(code as ErrorCode | undefined, 200));
  if (code !== undefined) span.setAttribute(A.ERROR_CODE, code);
  span.end(performance.now());
}

/** Ends an attempt's span with how it went: answered, failed (and how), or dismissed for another's answer. */
export function endAttempt(
  span: Span | undefined,
  outcome: AttemptOutcome,
  failure?: string,
  status?: number,
): void {
  if (span === undefined) return;
  span.setAttribute(A.OUTCOME, outcome);
  if (failure !== undefined) span.setAttribute(A.FAILURE, failure);
  if (status !== undefined) span.setAttribute(A.STATUS, status);
  if (outcome === "failed") span.setStatus({ code: SpanStatusCode.ERROR, message: failure ?? "failed" });
  span.end(performance.now());
}
