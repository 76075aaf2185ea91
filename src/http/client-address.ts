import type { IncomingMessage } from "node:http";
import { rawHeader } from "./raw-headers.js";

/**
 * The client's address for per-IP limits. X-Forwarded-For is believed only when the TCP peer is a
 * configured proxy, and then only its right-most entry that is not a proxy itself (proxyd keys on the
 * header by default, which any client can forge).
 */
export function clientAddress(req: IncomingMessage, trustedProxies: readonly string[]): string {
  const peer = normalise(req.socket.remoteAddress ?? "unknown");
  if (trustedProxies.length === 0 || !trustedProxies.includes(peer)) return peer;
  const hops = (rawHeader(req.rawHeaders, "x-forwarded-for") ?? "")
    .split(",")
    .map((h) => normalise(h.trim()));
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i] as string;
    if (hop !== "" && !trustedProxies.includes(hop)) return hop;
  }
  return peer;
}

function normalise(address: string): string {
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}
