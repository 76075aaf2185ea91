import type { SpanContext } from "@opentelemetry/api";
import { rawHeader } from "../http/raw-headers.js";

/** The W3C Trace Context header (https://www.w3.org/TR/trace-context/). */
export const TRACE_PARENT_HEADER = "traceparent";

/** The `sampled` bit of the trace flags. */
export const SAMPLED = 1;

// version, trace id, parent id and flags, as @opentelemetry/core's W3CTraceContextPropagator reads them:
// version ff is invalid, version 00 has nothing after the flags, a later version may. Parsed here rather
// than with that function so that the OpenTelemetry SDK is loaded only when tracing is on (start.ts).
const TRACE_PARENT = /^\s?([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\s?$/;

/**
 * The caller's `traceparent`, when it is one well-formed header: the remote parent of the request's span.
 * Nothing else the caller sends about traces is read: `tracestate` and `baggage` are the caller's text, and
 * never reach a span or a node. Two headers are joined with ", ", which no parse accepts: an ambiguous
 * parent is none.
 */
export function callerTraceParent(rawHeaders: readonly string[]): SpanContext | undefined {
  const header = rawHeader(rawHeaders, TRACE_PARENT_HEADER);
  if (header === undefined) return undefined;
  const match = TRACE_PARENT.exec(header);
  if (match === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
}

/** The caller's `traceparent` as a node gets it when its request is not traced: as it came, once it parsed. */
export function passedTraceParent(rawHeaders: readonly string[]): string | undefined {
  const parent = callerTraceParent(rawHeaders);
  return parent === undefined ? undefined : traceParentOf(parent);
}

/** A span context as the `traceparent` header a node gets: version 00, the trace, the span, sampled or not. */
export function traceParentOf(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & SAMPLED) === SAMPLED ? "01" : "00"}`;
}
