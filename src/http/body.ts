import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors/table.js";

/** Reads a request body up to `maxBytes`; a declared or actual size past it is refused with 413. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > maxBytes) throw new GatewayError("BODY_TOO_LARGE", { maxBytes });
  const chunks: Buffer[] = [];
  let seen = 0;
  try {
    for await (const chunk of req) {
      seen += (chunk as Buffer).length;
      if (seen > maxBytes) throw new GatewayError("BODY_TOO_LARGE", { maxBytes });
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    // The client hung up (or Node timed the request out and answered 408 itself).
    throw error instanceof GatewayError ? error : new GatewayError("CLIENT_CLOSED");
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
}

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const semicolon = contentType.indexOf(";");
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}
