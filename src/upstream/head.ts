import type { Dispatcher } from "undici";
import type { HeadCall, HeadEncoding } from "../registry/types.js";

/** How a group's upstreams are asked for their head: the registry's head call, under the mount it goes to. */
export interface HeadProbe {
  readonly method: Dispatcher.HttpMethod;
  /** The path below an upstream's base path: the mount's, then a REST head call's route. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | undefined;
  readonly call: HeadCall;
}

const JSON_HEADERS = { "content-type": "application/json", accept: "application/json" };

/** The probe request for `call` on the mount at `mountPath`. */
export function headProbe(call: HeadCall, mountPath: string): HeadProbe {
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
      call,
    };
  }
  return {
    method: call.method,
    path: `${base}${call.path}`,
    headers: call.body === undefined ? { accept: "application/json" } : JSON_HEADERS,
    body: call.body === undefined ? undefined : JSON.stringify(call.body),
    call,
  };
}

/** The height in a head call's answer: the registry's `field` path, decoded by its `encoding`. */
export function readHead(call: HeadCall, text: string): number {
  let value: unknown = JSON.parse(text);
  if (call.kind === "jsonrpc" && isObject(value) && value.error !== undefined)
    throw new Error(`the node answered with an error: ${JSON.stringify(value.error).slice(0, 200)}`);
  for (const name of call.field) {
    if (!isObject(value)) throw new Error(`no ${call.field.join(".")} in the answer`);
    value = value[name];
  }
  return decode(value, call.encoding, call.field.join("."));
}

/** A height as the registry's encoding writes it; throws when `value` is not one. */
export function decode(value: unknown, encoding: HeadEncoding, field: string): number {
  let height = Number.NaN;
  if (encoding === "integer" && typeof value === "number") height = value;
  else if (encoding === "hex-quantity" && typeof value === "string" && /^0x[0-9a-f]+$/i.test(value))
    height = Number.parseInt(value.slice(2), 16);
  else if (encoding === "decimal-string" && typeof value === "string" && /^\d+$/.test(value))
    height = Number(value);
  if (!Number.isSafeInteger(height) || height < 0)
    throw new Error(`${field} is not a height (${encoding}): ${JSON.stringify(value)?.slice(0, 80)}`);
  return height;
}

/** A height written in the registry's encoding, for a call that takes one (a range query's bounds). */
export function encodeHeight(height: number, encoding: HeadEncoding): string | number {
  if (encoding === "hex-quantity") return `0x${height.toString(16)}`;
  return encoding === "decimal-string" ? String(height) : height;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
