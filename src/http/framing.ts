import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors/table.js";

/**
 * Refuses a request whose body is framed by anything but Content-Length or exactly one
 * `Transfer-Encoding: chunked` (RFC 9112 §6.1), before any of the body is read. Node's parser drops a
 * coding it does not know (`gzip, chunked` reads as plain chunked), so the bytes it would hand over are
 * not what the client sent; they are never relayed. The connection is closed after the refusal, since
 * the unread body would otherwise be taken for the next request.
 */
export function checkFraming(req: IncomingMessage): void {
  const raw = req.rawHeaders;
  let coding: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 16 && name.toLowerCase() === "content-encoding") compressed(raw[i + 1] as string);
    if (name.length !== 17 || name.toLowerCase() !== "transfer-encoding") continue;
    if (coding !== undefined) throw refusal();
    coding = raw[i + 1] as string;
  }
  if (coding !== undefined && coding.trim().toLowerCase() !== "chunked") throw refusal();
}

/**
 * A compressed body (`Content-Encoding: gzip`) is refused by name: the nodes read bodies as they come, and
 * the gateway checks what it reads, so it would otherwise be a PARSE_ERROR that does not say why.
 */
function compressed(coding: string): void {
  const value = coding.trim().toLowerCase();
  if (value === "" || value === "identity") return;
  throw new GatewayError("UNSUPPORTED_MEDIA_TYPE", {
    reason: `the body is ${value}-encoded (Content-Encoding); send it uncompressed`,
  });
}

function refusal(): GatewayError {
  return new GatewayError(
    "UNSUPPORTED_TRANSFER_ENCODING",
    { reason: "send the body with Content-Length or Transfer-Encoding: chunked alone" },
    { connection: "close" },
  );
}
