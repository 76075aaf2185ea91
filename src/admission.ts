import type { IncomingMessage } from "node:http";
import type { GatewayConfig } from "./config/types.js";
import { GatewayError } from "./errors/table.js";
import { clientAddress } from "./http/client-address.js";
import { HostResolver } from "./http/host.js";
import { parseTarget, type RequestTarget } from "./http/target.js";
import { KeyLookup } from "./keys/digest.js";
import { type KeyStore, looksLikeKey, type Principal } from "./keys/types.js";
import { TokenBuckets } from "./limits/token-bucket.js";
import type { Endpoint } from "./registry/types.js";

/** A request that passed admission: where it goes and on whose behalf. */
export class Admitted {
  readonly endpoint: Endpoint;
  readonly target: RequestTarget;
  /** Undefined on a public no-key endpoint. */
  readonly principal: Principal | undefined;
  // Let go once the address is known: a WebSocket connection keeps its Admitted for its whole life.
  #req: IncomingMessage | undefined;
  readonly #trustedProxies: readonly string[];
  #ip: string | undefined = undefined;
  #publicId: string | undefined = undefined;

  constructor(
    endpoint: Endpoint,
    target: RequestTarget,
    principal: Principal | undefined,
    req: IncomingMessage,
    trustedProxies: readonly string[],
  ) {
    this.endpoint = endpoint;
    this.target = target;
    this.principal = principal;
    this.#req = req;
    this.#trustedProxies = trustedProxies;
  }

  /** The client's address, worked out on first use: a keyed HTTP call counts against its key and never asks. */
  get ip(): string {
    if (this.#ip === undefined) {
      this.#ip = clientAddress(this.#req as IncomingMessage, this.#trustedProxies);
      this.#req = undefined;
    }
    return this.#ip;
  }

  /** Who the rate limit and connection caps count against: a key's id, or the client IP. */
  get clientId(): string {
    if (this.principal !== undefined) return this.principal.keyId;
    if (this.#publicId === undefined) this.#publicId = `ip:${this.ip}`;
    return this.#publicId;
  }
}

/**
 * The checks every request and every WebSocket upgrade passes before anything else: its one Host names a
 * served label, its target is clean, its key is valid for that network, and its rate allows it.
 */
export class Admission {
  readonly #config: GatewayConfig;
  readonly #keys: KeyLookup;
  readonly #endpoints: ReadonlyMap<string, Endpoint>;
  readonly #hosts: HostResolver;
  readonly #buckets = new TokenBuckets();

  constructor(config: GatewayConfig, keys: KeyStore, endpoints: ReadonlyMap<string, Endpoint>) {
    this.#config = config;
    this.#keys = new KeyLookup(keys);
    this.#endpoints = endpoints;
    this.#hosts = new HostResolver(config.domain, config.publicHosts);
  }

  /** The endpoint the request's Host names; throws BAD_HOST, UNKNOWN_NETWORK or HEADERS_TOO_LARGE. */
  endpoint(req: IncomingMessage): { readonly endpoint: Endpoint; readonly publicHost: boolean } {
    const { maxHeaders } = this.#config.limits;
    if (req.rawHeaders.length / 2 > maxHeaders) throw new GatewayError("HEADERS_TOO_LARGE", { maxHeaders });
    const host = this.#hosts.resolve(req.rawHeaders, req.url ?? "/");
    const endpoint = this.#endpoints.get(host.label);
    if (endpoint === undefined || (host.kind === "public" && !endpoint.public))
      throw new GatewayError("UNKNOWN_NETWORK");
    return { endpoint, publicHost: host.kind === "public" };
  }

  /** Splits the target and checks the key; on a public host a first segment that looks like a key is one. */
  admit(req: IncomingMessage, endpoint: Endpoint, publicHost: boolean): Admitted {
    const target = parseTarget(req.url ?? "/", !publicHost || ((first) => first.startsWith("FN")));
    const principal =
      publicHost && target.key === undefined ? undefined : this.#authenticate(target.key, endpoint);
    return new Admitted(endpoint, target, principal, req, this.#config.trustedProxies);
  }

  /** Takes `cost` tokens from the caller's bucket, or throws RATE_LIMITED with Retry-After and RateLimit-*. */
  charge(admitted: Admitted, cost: number): void {
    const rate = admitted.principal?.rate ?? this.#config.limits.publicRate;
    const decision = this.#buckets.take(admitted.clientId, rate, cost);
    if (decision.allowed) return;
    throw new GatewayError(
      "RATE_LIMITED",
      { retryAfter: decision.retryAfter },
      {
        "retry-after": String(decision.retryAfter),
        "ratelimit-limit": String(rate.burst),
        "ratelimit-remaining": String(decision.remaining),
        "ratelimit-reset": String(decision.retryAfter),
      },
    );
  }

  #authenticate(key: string | undefined, endpoint: Endpoint): Principal {
    // A wrong key on a public host is refused like anywhere else, never downgraded to public access.
    if (!looksLikeKey(key)) throw new GatewayError("UNAUTHORIZED");
    const principal = this.#keys.principal(key);
    if (principal === undefined) throw new GatewayError("UNAUTHORIZED");
    if (principal.networks !== "*" && !principal.networks.has(endpoint.code)) {
      throw new GatewayError("NETWORK_FORBIDDEN", { network: endpoint.code });
    }
    if (endpoint.nodeClass === "archive" && !principal.archive) {
      throw new GatewayError("NETWORK_FORBIDDEN", {
        network: endpoint.code,
        reason: "the key has no archive access",
      });
    }
    return principal;
  }
}
