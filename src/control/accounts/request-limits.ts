import type { RateSpec } from "../../config/types.js";
import { GatewayError } from "../../errors/table.js";
import { clientNet } from "../../http/client-net.js";
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
