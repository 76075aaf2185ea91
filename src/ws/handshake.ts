import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors/table.js";

/** RFC 6455 §4.1: the key is 16 random bytes in base64, as `ws` checks it. */
const KEY = /^[+/0-9A-Za-z]{22}==$/;

/**
 * What `ws`'s own handshake check would refuse in an upgrade's method, key and version, found before the
 * upgrade takes a connection slot and opens a socket to a node: `ws` answers such an upgrade 400 by itself
 * and never calls back, so checking after would leave the slot taken and the node's socket open. The
 * rest of its check (a malformed Sec-WebSocket-Protocol) is caught where `ws` reports it (upgrade.ts,
 * `wsClientError`).
 */
export function checkHandshake(req: IncomingMessage): void {
  if (req.method !== "GET") throw invalid("a WebSocket upgrade is a GET");
  const key = req.headers["sec-websocket-key"];
  if (key === undefined || !KEY.test(key)) throw invalid("missing or invalid Sec-WebSocket-Key header");
  const version = Number(req.headers["sec-websocket-version"]);
  if (version !== 13 && version !== 8) throw invalid("missing or invalid Sec-WebSocket-Version header (13)");
}

export function invalid(reason: string): GatewayError {
  return new GatewayError("WEBSOCKET_HANDSHAKE_INVALID", { reason });
}
