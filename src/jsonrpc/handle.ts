import type { CallContext } from "../context.js";
import { sendJson } from "../errors/respond.js";
import { ERRORS, GatewayError } from "../errors/table.js";
import { mediaType } from "../http/body.js";
import type { JsonRpcPolicy } from "../registry/types.js";
import { readUpstreamBody, relayUpstream, sendUpstream } from "../upstream/forward.js";
import { type Checked, checkCall, idOf } from "./check.js";
import { type ParsedBody, parseJsonRpcBody } from "./scan.js";

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
  const rules = { policy, plan: ctx.principal?.plan, support: ctx.support, transport: "http" as const };
  const checked = parsed.calls.map((call) => checkCall(rules, call));
  for (const c of checked) if (c.ok) ctx.note({ method: c.method });

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

async function forward(ctx: CallContext, json: string): Promise<void> {
  const { res, signal, limits } = ctx;
  const upstream = await relayUpstream(
    ctx.upstreams(),
    request(ctx, json),
    signal,
    res,
    limits.upstream.maxResponseBytes,
  );
  ctx.note({ upstream: upstream.name });
}

/** A batch with refused calls: the upstream answers the rest, and the refusals join its array. */
async function forwardAndMerge(ctx: CallContext, json: string, refused: readonly string[]): Promise<void> {
  const { upstream, data } = await sendUpstream(ctx.upstreams(), request(ctx, json), ctx.signal);
  ctx.note({ upstream: upstream.name });
  const body = (await readUpstreamBody(data, ctx.limits.upstream.maxResponseBytes)).toString("utf8").trim();
  // Only notifications went upstream, and nodes answer those with no body (JSON-RPC 2.0 §6).
  if (body === "" && data.statusCode < 300) return sendJson(ctx.res, 200, `[${refused.join(",")}]`);
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
