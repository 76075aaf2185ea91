import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors/table.js";
import { BEARER_PROTOCOL } from "../keys/jwt.js";

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
  if (version !== 13 && version !== 8)
    throw invalid("missing or invalid Sec-WebSocket-Version header (13, or the hybi draft's 8)");
  // a JWT carried as a subprotocol is answered `bearer`, which the client must offer too: a browser fails a
  // handshake answered with no subprotocol it offered (keys/jwt.ts)
  const offered = req.headers["sec-websocket-protocol"]?.split(",").map((p) => p.trim());
  if (offered?.some((p) => p.startsWith(`${BEARER_PROTOCOL}.`)) && !offered.includes(BEARER_PROTOCOL))
    throw invalid(
      `a JWT sent as the ${BEARER_PROTOCOL}.<JWT> subprotocol needs ${BEARER_PROTOCOL} offered too`,
    );
}

export function invalid(reason: string): GatewayError {
  return new GatewayError("WEBSOCKET_HANDSHAKE_INVALID", { reason });
}
