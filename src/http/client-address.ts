import type { IncomingMessage } from "node:http";
import { addressMatcher } from "./address-blocks.js";
import { rawHeader } from "./raw-headers.js";

/** How many addresses' answers a TrustedProxies keeps: a few balancers, and the clients behind them. */
const ANSWERS = 1024;

/**
 * The config's `trustedProxies`, addresses and CIDR blocks, compiled once per config. A BlockList check
 * makes a SocketAddress each time (docs/performance.md), so each address's answer is kept, started over
 * past ANSWERS addresses.
 */
export class TrustedProxies {
  readonly #matches: ((ip: string) => boolean) | undefined;
  readonly #answers = new Map<string, boolean>();

  constructor(entries: readonly string[]) {
    this.#matches = entries.length === 0 ? undefined : addressMatcher(entries);
  }

  has(ip: string): boolean {
    if (this.#matches === undefined) return false;
    let found = this.#answers.get(ip);
    if (found === undefined) {
      found = this.#matches(ip);
      if (this.#answers.size >= ANSWERS) this.#answers.clear();
      this.#answers.set(ip, found);
    }
    return found;
  }
}

/**
 * The client's address for per-IP limits. X-Forwarded-For is believed only when the TCP peer is a
 * configured proxy, and then only its right-most entry that is not a proxy itself (proxyd keys on the
 * header by default, which any client can forge).
 */
export function clientAddress(req: IncomingMessage, trustedProxies: TrustedProxies): string {
  const peer = normalise(req.socket.remoteAddress ?? "unknown");
  if (!trustedProxies.has(peer)) return peer;
  const hops = (rawHeader(req.rawHeaders, "x-forwarded-for") ?? "")
    .split(",")
    .map((h) => hopAddress(h.trim()));
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i] as string;
    if (hop !== "" && !trustedProxies.has(hop)) return hop;
  }
  return peer;
}

function normalise(address: string): string {
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

/**
 * An X-Forwarded-For hop's address. A balancer may write the client's port beside it (Azure Application
 * Gateway: `203.0.113.7:54321`, `[2001:db8::7]:54321`): taken whole, it matched no key's `ips` and gave each
 * of a client's connections a per-IP bucket of its own. A bare IPv6 address has two colons or more.
 */
function hopAddress(hop: string): string {
  if (hop.startsWith("[")) {
    const end = hop.indexOf("]");
    const port = hop.slice(end + 1);
    return end > 0 && (port === "" || /^:\d{1,5}$/.test(port)) ? normalise(hop.slice(1, end)) : hop;
  }
  const colon = hop.indexOf(":");
  if (colon > 0 && hop.indexOf(":", colon + 1) === -1 && /^\d{1,5}$/.test(hop.slice(colon + 1)))
    return hop.slice(0, colon);
  return normalise(hop);
}
