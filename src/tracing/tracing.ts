import { hostname } from "node:os";
import {
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { TracingConfig } from "../config/types.js";
import { gatewayVersion } from "../embedded.js";
import type { Logger } from "../log.js";
import * as A from "./attributes.js";
import { gatewaySampler } from "./label-sampler.js";
import type { AttemptKind } from "./span-ends.js";
import { SAMPLED, traceParentOf } from "./trace-parent.js";

/**
 * The data plane's OpenTelemetry traces (docs/operations.md, "Traces"): spans exported over OTLP/HTTP in
 * batches to the configured collector, sampled per label (label-sampler.ts). One per proxy server, made
 * only when `tracing.enabled`, by start.ts, which loads this module and the SDK only then: with tracing off
 * no span, no id and no sampler run on a request, and the SDK is not in memory.
 */
export class Tracing {
  readonly #provider: TracerProvider;
  readonly #tracer: Tracer;
  readonly #config: TracingConfig;
  readonly #logger: Logger;

  /** `exporter` replaces the OTLP exporter (a test's own). */
  constructor(config: TracingConfig, logger: Logger, exporter?: SpanExporter) {
    this.#config = config;
    this.#logger = logger;
    const otlp =
      exporter ??
      new OTLPTraceExporter({ url: config.endpoint, headers: { ...config.headers }, timeoutMillis: 10_000 });
    this.#provider = new TracerProvider({
      sampler: gatewaySampler(config),
      resource: resourceFromAttributes({
        "service.name": config.serviceName,
        "service.version": gatewayVersion(),
        "service.instance.id": `${hostname()}:${process.pid}`,
      }),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter: new ReportedExporter(otlp, logger),
          maxQueueSize: 4096,
          maxExportBatchSize: 512,
          scheduledDelayMillis: 1_000,
        }),
      ],
    });
    this.#tracer = this.#provider.getTracer("node-gateway", gatewayVersion());
  }

  /**
   * The span of one request (an HTTP request or a WebSocket's upgrade), begun at `startedAt`
   * (performance.now()), under the caller's `traceparent` when it sent one; undefined when it is not
   * sampled. A request that is not sampled makes nothing at all, not even span ids: it goes on as with
   * tracing off, and its node gets the caller's own `traceparent`, if any. So the head decision for a
   * request without a parent (and for one whose caller decides) is made here, before the SDK is asked:
   * the SDK's unsampled span cost 1.5 µs a request, a tenth of the gateway's own time.
   */
  request(
    label: string,
    transport: "http" | "ws",
    requestId: string | undefined,
    parent: SpanContext | undefined,
    startedAt: number,
  ): RequestTrace | undefined {
    const config = this.#config;
    if (parent === undefined) {
      // the trace id is ours to make: a random draw at the label's ratio is the ratio sampler's decision
      if (!(Math.random() < (config.labels[label] ?? config.sampleRatio))) return undefined;
    } else if (config.followCallerSampling && (parent.traceFlags & SAMPLED) === 0) {
      return undefined;
    }
    const attributes = { [A.LABEL]: label, [A.TRANSPORT]: transport };
    if (requestId !== undefined) (attributes as Record<string, string>)[A.REQUEST_ID] = requestId;
    const context = parent === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, parent);
    const span = this.#tracer.startSpan(
      `${label} request`,
      { kind: SpanKind.SERVER, attributes, startTime: startedAt },
      context,
    );
    // a caller's trace that is not followed is sampled by the label's ratio on its trace id (label-sampler.ts)
    if (!span.isRecording()) return undefined;
    return new RequestTrace(this.#tracer, span, label);
  }

  /** Sends what is still queued, then stops; a collector that cannot be reached loses those spans, no more. */
  async shutdown(): Promise<void> {
    try {
      await this.#provider.shutdown();
    } catch (error) {
      this.#logger.log("warn", "trace export failed", { reason: (error as Error).message });
    }
  }
}

/** What the request's span says at its end: the label values its metrics were counted with. */
export interface RequestEnd {
  readonly family: string;
  readonly method: string;
  readonly methodClass: string;
  readonly result: string;
  readonly code: string | undefined;
  readonly status: number;
  readonly upstream: string | undefined;
  readonly cache: string | undefined;
  readonly tier: string | undefined;
  readonly computeUnits: number;
}

/** One request's span, and the spans under it: each attempt on a node, the cache's lookup and wait. */
export class RequestTrace {
  readonly #tracer: Tracer;
  /** The request's own span: what its node joins when no attempt's span covers the request. */
  readonly span: Span;
  readonly #label: string;

  constructor(tracer: Tracer, span: Span, label: string) {
    this.#tracer = tracer;
    this.span = span;
    this.#label = label;
  }

  /** The `traceparent` of a node's request that no span of its own covers. */
  traceParent(): string {
    return traceParentOf(this.span.spanContext());
  }

  /** An attempt's span, named by the node as the metrics name it. */
  attempt(upstream: string, kind: AttemptKind, startedAt: number): Span {
    return this.#tracer.startSpan(
      "upstream attempt",
      {
        kind: SpanKind.CLIENT,
        attributes: { [A.UPSTREAM]: upstream, [A.ATTEMPT]: kind },
        startTime: startedAt,
      },
      trace.setSpan(ROOT_CONTEXT, this.span),
    );
  }

  /** A step of the request's own (the cache's lookup, a coalesced wait). */
  step(name: "cache lookup" | "coalesced wait"): Span {
    return this.#tracer.startSpan(
      name,
      { kind: SpanKind.INTERNAL, startTime: performance.now() },
      trace.setSpan(ROOT_CONTEXT, this.span),
    );
  }

  /**
   * A WebSocket message's span, under its connection's upgrade: a connection is sampled once, at its
   * upgrade, and every message of a sampled one is traced (a message carries no `traceparent`).
   */
  message(): Span {
    return this.#tracer.startSpan(
      `${this.#label} message`,
      {
        kind: SpanKind.SERVER,
        attributes: { [A.LABEL]: this.#label, [A.TRANSPORT]: "ws" },
        startTime: performance.now(),
      },
      trace.setSpan(ROOT_CONTEXT, this.span),
    );
  }

  end(end: RequestEnd): void {
    const span = this.span;
    // the method or route as the metrics name it: from the registry, never the caller's own text
    span.updateName(`${this.#label} ${end.method}`);
    span.setAttribute(A.FAMILY, end.family);
    span.setAttribute(A.METHOD, end.method);
    span.setAttribute(A.METHOD_CLASS, end.methodClass);
    span.setAttribute(A.RESULT, end.result);
    span.setAttribute(A.STATUS, end.status);
    if (end.code !== undefined) span.setAttribute(A.ERROR_CODE, end.code);
    if (end.upstream !== undefined) span.setAttribute(A.UPSTREAM, end.upstream);
    if (end.cache !== undefined) span.setAttribute(A.CACHE, end.cache);
    if (end.tier !== undefined) span.setAttribute(A.TIER, end.tier);
    if (end.computeUnits > 0) span.setAttribute(A.COMPUTE_UNITS, end.computeUnits);
    // the error's code, never its text: a message may quote what the caller or a node sent
    if (end.result === "upstream" || end.result === "gateway")
      span.setStatus({ code: SpanStatusCode.ERROR, message: end.code ?? `HTTP ${end.status}` });
    span.end(performance.now());
  }
}

/** The OTLP exporter, with its failures logged: at most one line a minute, so a collector that is down does not flood the log. */
class ReportedExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  readonly #logger: Logger;
  #loggedAt = Number.NEGATIVE_INFINITY;
  #failed = 0;

  constructor(inner: SpanExporter, logger: Logger) {
    this.#inner = inner;
    this.#logger = logger;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.#inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS) this.#report(spans.length, result.error);
      done(result);
    });
  }

  #report(spans: number, error: Error | undefined): void {
    this.#failed += spans;
    const now = performance.now();
    if (now - this.#loggedAt < 60_000) return;
    this.#loggedAt = now;
    this.#logger.log("warn", "trace export failed", {
      spans: this.#failed,
      reason: error?.message ?? "unknown",
    });
    this.#failed = 0;
  }

  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}
