import type { CallContext } from "../context.js";
import { dedicatedPointer } from "../context.js";
import { rpcErrorJson, sendJson } from "../errors/respond.js";
import { ERRORS, type ErrorCode, GatewayError } from "../errors/table.js";
import { mediaType } from "../http/body.js";
import type { JsonRpcPolicy } from "../registry/types.js";
import { readUpstreamBody, relayResponse, sendUpstream } from "../upstream/forward.js";
import { type ParsedBody, parseJsonRpcBody, type RawCall } from "./scan.js";

type Checked =
  | { readonly ok: true; readonly json: string }
  | { readonly ok: false; readonly json: string; readonly code: ErrorCode };

const UPSTREAM_HEADERS = { "content-type": "application/json", accept: "application/json" };

/** A JSON-RPC POST: validate every call against the registry, forward what passed, answer the rest. */
export async function handleJsonRpc(ctx: CallContext, policy: JsonRpcPolicy, body: Buffer): Promise<void> {
  checkMediaType(ctx.req.headers["content-type"], policy.plainTextBody);
  const parsed = parseJsonRpcBody(body.toString("utf8"), ctx.limits.maxJsonDepth);
  try {
    await answer(ctx, policy, parsed);
  } catch (error) {
    // Whatever fails from here on (rate, upstream) answers a single call with the caller's own id.
    if (error instanceof GatewayError && !parsed.batch && parsed.calls[0] !== undefined) {
      error.rawId ??= idOf(parsed.calls[0]);
    }
    throw error;
  }
}

async function answer(ctx: CallContext, policy: JsonRpcPolicy, parsed: ParsedBody): Promise<void> {
  if (parsed.batch) {
    if (!policy.batch) throw new GatewayError("BATCH_NOT_SUPPORTED");
    if (parsed.calls.length === 0) throw new GatewayError("EMPTY_BATCH");
    if (parsed.calls.length > ctx.limits.maxBatch) {
      throw new GatewayError("BATCH_TOO_LARGE", { maxBatch: ctx.limits.maxBatch });
    }
  }
  ctx.charge(parsed.calls.length);
  const checked = parsed.calls.map((call) => checkCall(ctx, policy, call));

  if (!parsed.batch) {
    const only = checked[0] as Checked;
    if (!only.ok) return sendJson(ctx.res, ERRORS[only.code].status, only.json);
    return forward(ctx, only.json);
  }
  const passed = checked.filter((c) => c.ok).map((c) => c.json);
  const refused = checked.filter((c) => !c.ok).map((c) => c.json);
  ctx.note({ batch: parsed.calls.length, refused: refused.length });
  // Inside a batch each call gets its own answer and the HTTP status is 200 (proxyd does the same).
  if (passed.length === 0) return sendJson(ctx.res, 200, `[${refused.join(",")}]`);
  if (refused.length === 0) return forward(ctx, `[${passed.join(",")}]`);
  return forwardAndMerge(ctx, `[${passed.join(",")}]`, refused);
}

function checkMediaType(contentType: string | undefined, plainTextBody: boolean): void {
  const media = mediaType(contentType);
  if (media === "application/json") return;
  if (plainTextBody && (media === undefined || media === "text/plain")) return;
  throw new GatewayError("UNSUPPORTED_MEDIA_TYPE");
}

/** Applies the envelope rule and the method allow-list, and re-serialises what passed. */
function checkCall(ctx: CallContext, policy: JsonRpcPolicy, call: RawCall): Checked {
  const envelope = call.value as { id?: unknown; method?: unknown };
  if (!policy.validate(call.value)) {
    const first = policy.validate.errors?.[0];
    const detail = { reason: `${first?.instancePath || "request"} ${first?.message ?? "is invalid"}`.trim() };
    return refuse("INVALID_REQUEST", idOf(call), detail);
  }
  const id = idOf(call);
  const method = envelope.method as string;
  const access = policy.methods.get(method);
  if (access === undefined) return refuse("METHOD_NOT_FOUND", id, { method });
  if (access === "websocket") return refuse("WEBSOCKET_ONLY", id, { method });
  if (access === "dedicated" && ctx.principal?.plan !== "dedicated") {
    return refuse("METHOD_NOT_ON_PLAN", id, { method, ...dedicatedPointer(ctx.support) });
  }
  ctx.note({ method });
  return { ok: true, json: reserialise(call, method) };
}

/**
 * What goes upstream is what was validated: the known members only, the method as parsed, and the id
 * and params as the caller's own source text (so an id keeps all its digits). Extra members are dropped.
 */
function reserialise(call: RawCall, method: string): string {
  const { members } = call;
  const jsonrpc = members.get("jsonrpc");
  const id = members.get("id");
  const params = members.get("params");
  let out = "{";
  if (jsonrpc !== undefined) out += `"jsonrpc":${jsonrpc},`;
  if (id !== undefined) out += `"id":${id},`;
  out += `"method":${JSON.stringify(method)}`;
  if (params !== undefined) out += `,"params":${params}`;
  return `${out}}`;
}

/** The id to answer with: the caller's own token when it is a valid id, else null (JSON-RPC 2.0 §5). */
function idOf(call: RawCall): string {
  const raw = call.members.get("id");
  if (raw === undefined) return "null";
  const id = (call.value as { id?: unknown }).id;
  const valid =
    id === null ||
    typeof id === "number" ||
    typeof id === "string" ||
    (typeof id === "object" && !Array.isArray(id));
  return valid ? raw : "null";
}

function refuse(code: ErrorCode, id: string, detail: Record<string, unknown>): Checked {
  return { ok: false, code, json: rpcErrorJson(code, id, detail) };
}

async function forward(ctx: CallContext, json: string): Promise<void> {
  const { upstream, data } = await sendUpstream(ctx.upstreams(), request(ctx, json), ctx.signal);
  ctx.note({ upstream: upstream.name });
  await relayResponse(ctx.res, data, ctx.limits.upstream.maxResponseBytes);
}

/** A batch with refused calls: the upstream answers the rest, and the refusals join its array. */
async function forwardAndMerge(ctx: CallContext, json: string, refused: readonly string[]): Promise<void> {
  const { upstream, data } = await sendUpstream(ctx.upstreams(), request(ctx, json), ctx.signal);
  ctx.note({ upstream: upstream.name });
  const body = (await readUpstreamBody(data, ctx.limits.upstream.maxResponseBytes)).toString("utf8").trim();
  if (data.statusCode !== 200 || !body.startsWith("[") || !body.endsWith("]")) {
    // Not a batch answer (the node refused the batch as a whole): pass it on as the node sent it.
    return sendJson(ctx.res, data.statusCode, body);
  }
  const inner = body.slice(1, -1).trim();
  sendJson(ctx.res, 200, `[${inner}${inner === "" ? "" : ","}${refused.join(",")}]`);
}

function request(ctx: CallContext, json: string) {
  return {
    method: "POST" as const,
    path: ctx.target.path,
    query: ctx.target.query,
    headers: UPSTREAM_HEADERS,
    body: json,
    stream: false,
  };
}
