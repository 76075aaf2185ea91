import type { Attributes, Context, SpanKind } from "@opentelemetry/api";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  type SamplingResult,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace";
import type { TracingConfig } from "../config/types.js";
import { LABEL } from "./attributes.js";

/**
 * Head sampling by label: a request's span is kept with its label's ratio (`tracing.labels`, else
 * `tracing.sampleRatio`), decided by its trace id as OpenTelemetry's ratio sampler does, so that every
 * service that sees the same trace decides the same. Spans under a request's span follow its decision.
 */
class LabelRatioSampler implements Sampler {
  readonly #byLabel: ReadonlyMap<string, Sampler>;
  readonly #otherwise: Sampler;

  constructor(config: TracingConfig) {
    this.#otherwise = new TraceIdRatioBasedSampler(config.sampleRatio);
    this.#byLabel = new Map(
      Object.entries(config.labels).map(([label, ratio]) => [label, new TraceIdRatioBasedSampler(ratio)]),
    );
  }

  shouldSample(
    context: Context,
    traceId: string,
    name: string,
    kind: SpanKind,
    attributes: Attributes,
  ): SamplingResult {
    const label = attributes[LABEL];
    const sampler = (typeof label === "string" ? this.#byLabel.get(label) : undefined) ?? this.#otherwise;
    return sampler.shouldSample(context, traceId, name, kind, attributes, []);
  }

  toString(): string {
    return "LabelRatioSampler";
  }
}

/**
 * The sampler of the gateway's spans. A request without a caller's trace was sampled by Tracing.request
 * before any span was made (a root here is always kept); one whose caller's decision is not followed
 * (`followCallerSampling: false`: a caller could otherwise have every one of its calls traced) is sampled
 * by its label's ratio on the caller's trace id; else the caller's `traceparent` flag decides.
 */
export function gatewaySampler(config: TracingConfig): Sampler {
  const byLabel = new LabelRatioSampler(config);
  const follow = config.followCallerSampling;
  return new ParentBasedSampler({
    root: new AlwaysOnSampler(),
    remoteParentSampled: follow ? new AlwaysOnSampler() : byLabel,
    remoteParentNotSampled: follow ? new AlwaysOffSampler() : byLabel,
  });
}
