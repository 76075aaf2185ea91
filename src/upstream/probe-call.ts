import type { Dispatcher } from "undici";
import type { ChainCall, HeadCall, ProbeCall } from "../registry/types.js";
import { decode } from "./head.js";

/** A registry call (a head call, a chain call) as the prober sends it to a group's upstreams. */
export interface ProbeRequest {
  readonly method: Dispatcher.HttpMethod;
  /** The path below an upstream's base path: the mount's, then a REST call's route. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | undefined;
}

const JSON_HEADERS = { "content-type": "application/json", accept: "application/json" };

/** The request for `call` on the mount at `mountPath`. */
export function probeRequest(call: ProbeCall, mountPath: string): ProbeRequest {
  const base = mountPath === "/" ? "" : mountPath;
  if (call.kind === "jsonrpc") {
    // Only the members the dialect's envelope takes: a params member only when the registry gives one.
    const request = {
      jsonrpc: "2.0",
      id: 1,
      method: call.method,
      ...(call.params === undefined ? {} : { params: call.params }),
    };
    return {
      method: "POST",
      path: base === "" ? "/" : base,
      headers: JSON_HEADERS,
      body: JSON.stringify(request),
    };
  }
  return {
    method: call.method,
    path: `${base}${call.path}`,
    headers: call.body === undefined ? { accept: "application/json" } : JSON_HEADERS,
    body: call.body === undefined ? undefined : JSON.stringify(call.body),
  };
}

/**
 * What a node's answer to a probe says:
 * - `failed`: evidence that the node failed: a 5xx, a 429, a refusal of the gateway's credentials
 *   (401, 403), or an error that is not null: a JSON-RPC answer's `error`, or the member a REST
 *   interface's nodes put their errors in (registry `errorMember`);
 * - `unreadable`: the node answered, but not with the field the registry reads (a proxy's error page, a
 *   node at its genesis, a method the node does not know): nothing is known, and nothing is held against it;
 * - `value`: the field's value.
 *
 * JSON-RPC 1.0 nodes put `"error": null` beside every result: null is no error.
 */
export type ProbeReading =
  | { readonly kind: "failed"; readonly detail: string }
  | { readonly kind: "unreadable"; readonly detail: string }
  | { readonly kind: "value"; readonly value: unknown };

export function readProbeAnswer(
  call: ProbeCall,
  statusCode: number,
  text: string,
  errorMember?: string,
): ProbeReading {
  const failedStatus = isFailureStatus(statusCode);
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    const detail = `HTTP ${statusCode}, not JSON: ${JSON.stringify(text.slice(0, 80))}`;
    return failedStatus ? { kind: "failed", detail } : { kind: "unreadable", detail };
  }
  const member = call.kind === "jsonrpc" ? "error" : errorMember;
  const error = member !== undefined && isObject(answer) ? answer[member] : undefined;
  if (error !== undefined && error !== null)
    return { kind: "failed", detail: `HTTP ${statusCode}, error ${JSON.stringify(error).slice(0, 200)}` };
  if (failedStatus) return { kind: "failed", detail: `HTTP ${statusCode}` };
  if (statusCode < 200 || statusCode >= 300) return { kind: "unreadable", detail: `HTTP ${statusCode}` };
  let value = answer;
  for (const name of call.field) {
    if (!isObject(value)) return { kind: "unreadable", detail: `no ${call.field.join(".")} in the answer` };
    value = value[name];
  }
  return value === undefined
    ? { kind: "unreadable", detail: `no ${call.field.join(".")} in the answer` }
    : { kind: "value", value };
}

/** A status that says the node failed, whatever its body: a 5xx, a 429, its refusal of the gateway's credentials. */
export function isFailureStatus(statusCode: number): boolean {
  return statusCode >= 500 || statusCode === 429 || statusCode === 401 || statusCode === 403;
}

/** A registry call's by-hash params (a gap fill's, a finality call's) with every "{hash}" replaced by the hash. */
export function withHash(template: unknown, hash: unknown): unknown {
  if (template === "{hash}") return hash;
  if (Array.isArray(template)) return template.map((item) => withHash(item, hash));
  if (typeof template === "object" && template !== null)
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, withHash(v, hash)]));
  return template;
}

/** The height in an answer to a head call (a WebSocket gap fill's); throws when it holds none. */
export function readHead(call: HeadCall, text: string): number {
  const reading = readProbeAnswer(call, 200, text);
  if (reading.kind !== "value") throw new Error(reading.detail);
  const head = headOf(call, reading.value);
  if ("problem" in head) throw new Error(head.problem);
  return head.height;
}

/** The height in a head call's field, or why it holds none. */
export function headOf(call: HeadCall, value: unknown): { height: number } | { problem: string } {
  try {
    return { height: decode(value, call.encoding, call.field.join(".")) };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}

/**
 * The chain a chain call's field names, as text: with an encoding, the number it decodes to (so that
 * 0x38 and the registry's chainId 56 compare equal); without, the value as the node writes it.
 */
export function chainOf(call: ChainCall, value: unknown): string | undefined {
  if (call.encoding !== undefined) {
    try {
      return String(decode(value, call.encoding, call.field.join(".")));
    } catch {
      return undefined;
    }
  }
  return typeof value === "string" || typeof value === "number" ? String(value) : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
