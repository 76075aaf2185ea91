import type { CallContext } from "../context.js";
import { sendJson } from "../errors/respond.js";
import { ERRORS, GatewayError } from "../errors/table.js";
import { requestMediaType } from "../http/body.js";
import type { JsonRpcPolicy } from "../registry/types.js";
import { type RelayDone, readUpstreamBody, relayUpstream, sendUpstream } from "../upstream/forward.js";
import {
  type CallRules,
  type Checked,
  checkCall,
  idOf,
  type PassedCall,
  sendableAsReceived,
} from "./check.js";
import { type ParsedBody, parseJsonRpcBody, type RawCall } from "./scan.js";

const UPSTREAM_HEADERS = { "content-type": "application/json", accept: "application/json" };

/**
 * A JSON-RPC POST: validate every call against the registry, forward what passed, answer the rest, and
 * call `done` once the answer is out. What is refused before anything is sent is thrown.
 */
export function handleJsonRpc(ctx: CallContext, policy: JsonRpcPolicy, body: Buffer, done: RelayDone): void {
  checkMediaType(requestMediaType(ctx.req), policy.plainTextBody);
  const text = body.toString("utf8");
  const parsed = parseJsonRpcBody(text, ctx.limits.maxJsonDepth);
  // Whatever fails from here on (rate, upstream) answers a single call with the caller's own id.
  if (!parsed.batch && parsed.calls[0] !== undefined) ctx.replyId = idOf(parsed.calls[0]);
  answer(ctx, policy, parsed, text, body, done);
}

function answer(
  ctx: CallContext,
  policy: JsonRpcPolicy,
  parsed: ParsedBody,
  text: string,
  body: Buffer,
  done: RelayDone,
): void {
  if (parsed.batch) {
    if (!policy.batch) throw new GatewayError("BATCH_NOT_SUPPORTED");
    if (parsed.calls.length === 0) throw new GatewayError("EMPTY_BATCH");
    if (parsed.calls.length > ctx.limits.maxBatch) {
      throw new GatewayError("BATCH_TOO_LARGE", { maxBatch: ctx.limits.maxBatch });
    }
  }
  ctx.charge(parsed.calls.length);
  const rules = { policy, plan: ctx.principal?.plan, support: ctx.support, transport: "http" as const };
  if (parsed.batch) answerBatch(ctx, rules, parsed.calls, text, body, done);
  else answerOne(ctx, checkCall(rules, parsed.calls[0] as RawCall), text, body, done);
}

function answerOne(ctx: CallContext, only: Checked, text: string, body: Buffer, done: RelayDone): void {
  if (only.ok) {
    ctx.access.method = only.method;
    forward(ctx, sendableAsReceived(text, [only]) ? body : only.json, done);
  } else {
    sendJson(ctx.res, ERRORS[only.code].status, only.json);
    done();
  }
}

function answerBatch(
  ctx: CallContext,
  rules: CallRules,
  calls: readonly RawCall[],
  text: string,
  body: Buffer,
  done: RelayDone,
): void {
  const checked = calls.map((call) => checkCall(rules, call));
  const passed = checked.filter((call): call is PassedCall => call.ok);
  const refused = checked.flatMap((call) => (call.ok ? [] : [call.json]));
  ctx.access.method = passed.at(-1)?.method;
  ctx.access.batch = calls.length;
  ctx.access.refused = refused.length;
  // Inside a batch each call gets its own answer and the HTTP status is 200 (proxyd does the same).
  if (passed.length === 0) {
    sendJson(ctx.res, 200, `[${refused.join(",")}]`);
    done();
    return;
  }
  if (refused.length > 0) forwardAndMerge(ctx, batchOf(passed), refused).then(() => done(), done);
  else forward(ctx, sendableAsReceived(text, checked) ? body : batchOf(passed), done);
}

function batchOf(calls: readonly PassedCall[]): string {
  return `[${calls.map((call) => call.json).join(",")}]`;
}

function checkMediaType(media: string | undefined, plainTextBody: boolean): void {
  if (media === "application/json") return;
  if (plainTextBody && (media === undefined || media === "text/plain")) return;
  throw new GatewayError("UNSUPPORTED_MEDIA_TYPE");
}

function forward(ctx: CallContext, json: string | Buffer, done: RelayDone): void {
  relayUpstream(
    ctx.upstreams(),
    request(ctx, json),
    ctx.res,
    ctx.limits.upstream.maxResponseBytes,
    ctx.access,
    done,
  );
}

/** A batch with refused calls: the upstream answers the rest, and the refusals join its array. */
async function forwardAndMerge(ctx: CallContext, json: string, refused: readonly string[]): Promise<void> {
  const { upstream, data } = await sendUpstream(ctx.upstreams(), request(ctx, json), ctx.res);
  ctx.access.upstream = upstream.name;
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

function request(ctx: CallContext, json: string | Buffer) {
  return {
    method: "POST" as const,
    path: ctx.target.path,
    query: ctx.target.query,
    headers: UPSTREAM_HEADERS,
    body: json,
    stream: false,
  };
}
