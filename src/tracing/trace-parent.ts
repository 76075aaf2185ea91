import { type SpanContext, TraceFlags } from "@opentelemetry/api";
import { parseTraceParent, TRACE_PARENT_HEADER } from "@opentelemetry/core";
import { rawHeader } from "../http/raw-headers.js";

export { TRACE_PARENT_HEADER };

/**
 * The caller's W3C `traceparent` (https://www.w3.org/TR/trace-context/), when it is one well-formed
 * header: the remote parent of the request's span. Nothing else the caller sends about traces is read:
 * `tracestate` and `baggage` are the caller's text, and never reach a span or a node.
 */
export function callerTraceParent(rawHeaders: readonly string[]): SpanContext | undefined {
  const header = rawHeader(rawHeaders, TRACE_PARENT_HEADER);
  // two headers are joined with ", ", which no parse accepts: an ambiguous parent is none
  if (header === undefined) return undefined;
  const parent = parseTraceParent(header);
  return parent === null ? undefined : { ...parent, isRemote: true };
}

/** The caller's `traceparent` as a node gets it when tracing is off: as it came, once it parsed. */
export function passedTraceParent(rawHeaders: readonly string[]): string | undefined {
  const parent = callerTraceParent(rawHeaders);
  return parent === undefined ? undefined : traceParentOf(parent);
}

/** A span context as the `traceparent` header a node gets: version 00, the trace, the span, sampled or not. */
export function traceParentOf(context: SpanContext): string {
  const flags = (context.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? "01" : "00";
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}
