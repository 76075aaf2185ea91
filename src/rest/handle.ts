import type { Dispatcher } from "undici";
import type { CallContext } from "../context.js";
import { dedicatedPointer } from "../context.js";
import { GatewayError } from "../errors/table.js";
import { collectBody, requestMediaType } from "../http/body.js";
import { rawHeader } from "../http/raw-headers.js";
import { matchRoute } from "../registry/match-route.js";
import type { RouteNode } from "../registry/types.js";
import { type RelayDone, relayUpstream } from "../upstream/forward.js";

// Bodies a REST node takes: JSON for most, raw bytes for signed transactions (algod takes msgpack).
const BODY_TYPES = new Set([
  "application/json",
  "application/x-binary",
  "application/msgpack",
  "application/octet-stream",
  "text/plain",
]);
const WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/**
 * A REST call: the method and path must match a registry route; the query string goes along. `done` is
 * called once the answer is out; what is refused before the body is read is thrown.
 */
export function handleRest(
  ctx: CallContext,
  routes: RouteNode,
  segments: readonly string[],
  done: RelayDone,
): void {
  const method = ctx.req.method ?? "GET";
  const match = matchRoute(routes, method, segments);
  if (match.kind === "not-found") throw new GatewayError("NOT_FOUND");
  if (match.kind === "method-not-allowed") {
    throw new GatewayError(
      "HTTP_METHOD_NOT_ALLOWED",
      { allow: match.allow },
      { allow: match.allow.join(", ") },
    );
  }
  if (match.access === "dedicated" && ctx.principal?.plan !== "dedicated") {
    throw new GatewayError("METHOD_NOT_ON_PLAN", {
      route: `${method} ${ctx.target.path}`,
      ...dedicatedPointer(ctx.support),
    });
  }
  ctx.charge(1);
  ctx.access.route = method;

  const headers: Record<string, string> = {
    accept: rawHeader(ctx.req.rawHeaders, "accept") ?? "application/json",
  };
  const stream = match.access === "stream";
  if (!WITH_BODY.has(method)) {
    relay(ctx, method, headers, undefined, stream, done);
    return;
  }
  collectBody(ctx.req, ctx.limits.maxBodyBytes, (error, body) => {
    try {
      if (error !== undefined) throw error;
      const media = requestMediaType(ctx.req) ?? "application/json";
      if (body.length > 0 && !BODY_TYPES.has(media)) throw new GatewayError("UNSUPPORTED_MEDIA_TYPE");
      headers["content-type"] = media;
      relay(ctx, method, headers, body, stream, done);
    } catch (thrown) {
      done(thrown);
    }
  });
}

function relay(
  ctx: CallContext,
  method: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
  stream: boolean,
  done: RelayDone,
): void {
  // A stream stays open while the node pushes: the socket's idle timeout must not cut it.
  if (stream) ctx.req.socket.setTimeout(0);
  relayUpstream(
    ctx.upstreams(),
    {
      method: method as Dispatcher.HttpMethod,
      path: ctx.target.path,
      query: ctx.target.query,
      headers,
      body,
      stream,
    },
    ctx.res,
    stream ? Number.POSITIVE_INFINITY : ctx.limits.upstream.maxResponseBytes,
    ctx.access,
    done,
  );
}
