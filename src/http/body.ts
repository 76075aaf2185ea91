import type { IncomingMessage, ServerResponse } from "node:http";
import { GatewayError } from "../errors/table.js";
import { rawHeader } from "./raw-headers.js";

export type BodyCallback = (error: GatewayError | undefined, body: Buffer) => void;

const NO_BODY = Buffer.alloc(0);

/**
 * Reads a request body up to `maxBytes` and calls back once; a declared or actual size past it is
 * refused with 413. A client that sent `Expect: 100-continue` is told to send the body only now, once
 * the request's head has passed every check (`res`; the proxy's server hands such requests to its handler
 * instead of letting Node answer 100 at once), so a refusal is its final answer and no body is sent for
 * it. Events and a callback rather than an async iterator or a promise: this runs once per request, and
 * both showed in the profile (docs/performance.md).
 */
export function collectBody(
  req: IncomingMessage,
  maxBytes: number,
  callback: BodyCallback,
  res?: ServerResponse,
  batches = true,
): void {
  const declared = Number(rawHeader(req.rawHeaders, "content-length", true) ?? 0);
  if (declared > maxBytes) {
    callback(new GatewayError("BODY_TOO_LARGE", tooLarge(maxBytes, batches)), NO_BODY);
    return;
  }
  if (res !== undefined && expectsContinue(req)) res.writeContinue();
  const chunks: Buffer[] = [];
  let seen = 0;
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    chunks.push(chunk);
    if (seen <= maxBytes) return;
    done();
    req.resume();
    callback(new GatewayError("BODY_TOO_LARGE", tooLarge(maxBytes, batches)), NO_BODY);
  };
  const onEnd = () => {
    done();
    callback(undefined, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  };
  // The client hung up (or Node timed the request out and answered 408 itself). An IncomingMessage emits
  // 'error' only to listeners it has, and 'close' after every destroy, so 'close' alone is enough.
  const onGone = () => {
    done();
    callback(new GatewayError("CLIENT_CLOSED"), NO_BODY);
  };
  const done = () => {
    req.off("data", onData).off("end", onEnd).off("close", onGone);
  };
  req.on("data", onData).on("end", onEnd).on("close", onGone);
}

/** Whether the client waits for `100 Continue` before it sends the body. */
export function expectsContinue(req: IncomingMessage): boolean {
  return rawHeader(req.rawHeaders, "expect")?.toLowerCase() === "100-continue";
}

/**
 * Whether keeping the connection after refusing this request would mean reading and discarding more body
 * than the gateway takes: Node reads a refused request's unread body to the end before the next request
 * on the connection, however large it was declared or however long a chunked one runs. Such a refusal
 * closes the connection instead (`Connection: close`), as nginx does for its 413.
 */
export function unreadBodyTooLarge(req: IncomingMessage, maxBytes: number): boolean {
  if (req.complete) return false;
  const declared = rawHeader(req.rawHeaders, "content-length", true);
  if (declared !== undefined) return Number(declared) > maxBytes;
  return rawHeader(req.rawHeaders, "transfer-encoding", true) !== undefined;
}

/** `collectBody` as a promise, for paths off the data plane's hot loop. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    collectBody(
      req,
      maxBytes,
      (error, body) => (error === undefined ? resolve(body) : reject(error)),
      undefined,
      false,
    ),
  );
}

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const semicolon = contentType.indexOf(";");
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

/** The media type of the request's Content-Type (see mediaType). */
export function requestMediaType(req: IncomingMessage): string | undefined {
  return mediaType(rawHeader(req.rawHeaders, "content-type", true));
}

/** BODY_TOO_LARGE's detail: the limit, and what to do (split a batch, where the request may be one). */
function tooLarge(maxBytes: number, batches: boolean): Record<string, unknown> {
  const split = batches ? " (a batch may go as smaller batches)" : "";
  return { maxBytes, reason: `a request body may be at most ${maxBytes} bytes here${split}` };
}
