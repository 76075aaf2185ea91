import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors/table.js";

/** Reads a request body up to `maxBytes`; a declared or actual size past it is refused with 413. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > maxBytes) return Promise.reject(new GatewayError("BODY_TOO_LARGE", { maxBytes }));
  // Events rather than an async iterator: this runs once per request, and the iterator cost showed up
  // in the profile (bench/README.md).
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let seen = 0;
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      chunks.push(chunk);
      if (seen <= maxBytes) return;
      done();
      req.resume();
      reject(new GatewayError("BODY_TOO_LARGE", { maxBytes }));
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    };
    // The client hung up (or Node timed the request out and answered 408 itself).
    const onGone = () => {
      done();
      reject(new GatewayError("CLIENT_CLOSED"));
    };
    const done = () => {
      req.off("data", onData).off("end", onEnd).off("error", onGone).off("close", onGone);
    };
    req.on("data", onData).on("end", onEnd).on("error", onGone).on("close", onGone);
  });
}

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const semicolon = contentType.indexOf(";");
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}
