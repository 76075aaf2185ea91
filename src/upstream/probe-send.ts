import type { Dispatcher } from "undici";
import { GatewayError } from "../errors/table.js";
import type { ProbeCall } from "../registry/types.js";
import { deadlineError } from "./failure.js";
import type { CappedOptions } from "./interceptors.js";
import { type ProbeReading, type ProbeRequest, readProbeAnswer } from "./probe-call.js";
import type { Probe } from "./probe-targets.js";
import { requestOn } from "./undici-pool.js";
import { type Upstream, upstreamPath } from "./upstreams.js";

// How one probe reaches a node and how its answer is read: within the probe's own deadline, capped, masked.

/**
 * A probe's answer is small, but not tiny: a head call may answer the whole block, transactions and all.
 * A node that sends more than this is not answering the call, and its head is unknown.
 */
const MAX_PROBE_BYTES = 4 * 1024 * 1024;

/** A probe's answer; `cut` when it was longer than MAX_PROBE_BYTES and the read stopped. */
export interface ProbeAnswer {
  readonly statusCode: number;
  readonly text: string;
  readonly cut?: true;
}

/**
 * Sends one probe request within `timeoutMs`, connecting included (the pool's connect timeout may be
 * longer), through the upstream's interceptors, and reads its answer whole up to MAX_PROBE_BYTES.
 */
export async function ask(member: Upstream, request: ProbeRequest, timeoutMs: number): Promise<ProbeAnswer> {
  const controller = new AbortController();
  const deadline = setTimeout(
    () => controller.abort(deadlineError(`no answer within ${timeoutMs} ms`)),
    timeoutMs,
  );
  const options: Dispatcher.RequestOptions & CappedOptions = {
    method: request.method,
    path: upstreamPath(member, request.path, ""),
    headers: member.hasHeaders ? { ...request.headers, ...member.headers } : request.headers,
    body: request.body ?? null,
    // the probe's own deadline above ends it first: a hung node's probe reads one way, not undici's
    // headers timeout on one probe and the deadline on the next
    headersTimeout: timeoutMs * 2,
    bodyTimeout: timeoutMs * 2,
    signal: controller.signal,
    maxResponseBytes: MAX_PROBE_BYTES,
  };
  try {
    const { statusCode, body } = await requestOn({ dispatch: member.dispatch } as Dispatcher, options);
    // masked as it arrives, before anything read from it (a detail, a value for a log line) is cut short:
    // a secret cut in two would be masked in neither the reading nor the health record
    return { statusCode, text: member.redact(await body.text()) };
  } catch (error) {
    // Past the cap the node did answer, with more than an answer to the call: nothing to read.
    if (error instanceof GatewayError && error.code === "UPSTREAM_RESPONSE_TOO_LARGE")
      return { statusCode: 200, text: "", cut: true };
    throw error;
  } finally {
    clearTimeout(deadline);
  }
}

/** The value at a probe's field in a node's answer; undefined when the node did not give one. */
export function valueIn(probe: Probe<ProbeCall>, answer: ProbeAnswer): unknown {
  const reading = read(probe.call, answer, probe.errorMember);
  return reading.kind === "value" ? reading.value : undefined;
}

export function read(call: ProbeCall, answer: ProbeAnswer, errorMember: string | undefined): ProbeReading {
  if (answer.cut === true)
    return { kind: "unreadable", detail: `the answer is over ${MAX_PROBE_BYTES} bytes` };
  return readProbeAnswer(call, answer.statusCode, answer.text, errorMember);
}

export function valueAt(value: unknown, path: readonly string[]): unknown {
  for (const member of path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string, unknown>)[member];
  }
  return value;
}
