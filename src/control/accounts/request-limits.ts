import { isIPv4, isIPv6 } from "node:net";
import type { RateSpec } from "../../config/types.js";
import { GatewayError } from "../../errors/table.js";
import { TokenBuckets } from "../../limits/token-bucket.js";

/**
 * The per-IP and per-e-mail limits on sign-up, sign-in e-mails and free tests, which anyone can ask for
 * without a key. One set of buckets serves them all (each id names its purpose), bounded so that a flood of
 * addresses cannot grow it without end (TokenBuckets forgets refilled buckets, then the least recently used,
 * never the whole table).
 */
export class RequestLimits {
  readonly #buckets = new TokenBuckets(50_000);

  /** Takes a token from the bucket of `id`, or throws RATE_LIMITED saying when to come back. */
  take(id: string, rate: RateSpec): void {
    const decision = this.#buckets.take(id, rate);
    if (!decision.allowed) {
      throw new GatewayError(
        "RATE_LIMITED",
        { retryAfter: decision.retryAfter },
        { "retry-after": String(decision.retryAfter) },
      );
    }
  }

  /** take() for a client address's bucket for `purpose`: an IPv6 client counts by its /64 (clientNet). */
  takeForAddress(purpose: string, ip: string, rate: RateSpec): void {
    this.take(`${purpose}:${clientNet(ip)}`, rate);
  }
}

/**
 * The network a client address is counted by: an IPv4 address itself (also when written IPv4-mapped), an
 * IPv6 address's /64. One host or subscriber is routinely given a whole /64, so counting its addresses one
 * by one would give it 2^64 buckets to draw from, and let it flood the table.
 */
export function clientNet(ip: string): string {
  const address = ip.split("%")[0] as string;
  if (!isIPv6(address)) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined && isIPv4(mapped)) return mapped;
  const [head = "", tail] = address.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  // an embedded IPv4 tail is two groups; it only ever falls in the last 64 bits, which are dropped
  const rightGroups = right.reduce((n, g) => n + (g.includes(".") ? 2 : 1), 0);
  const groups =
    tail === undefined ? left : [...left, ...Array(8 - left.length - rightGroups).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}
