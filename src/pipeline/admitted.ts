import type { IncomingMessage } from "node:http";
import { clientAddress } from "../http/client-address.js";
import type { RequestTarget } from "../http/target.js";
import type { Principal } from "../keys/types.js";
import type { PlanTerms } from "../plans/plan-terms.js";
import type { Endpoint } from "../registry/types.js";

/** Stage 2's value: a request that passed admission, where it goes and on whose behalf. */
export class Admitted {
  readonly endpoint: Endpoint;
  readonly target: RequestTarget;
  /** Undefined on a public no-key endpoint. */
  readonly principal: Principal | undefined;
  /** The terms of the principal's plan (docs/plans.md); undefined with the principal. */
  readonly plan: PlanTerms | undefined;
  /** An HTTP request's id (http/request-id.ts), sent on to the node; undefined for a WebSocket. */
  readonly requestId: string | undefined;
  // Let go once the address is known: a WebSocket connection keeps its Admitted for its whole life.
  #req: IncomingMessage | undefined;
  readonly #trustedProxies: readonly string[];
  #ip: string | undefined = undefined;
  #publicId: string | undefined = undefined;

  constructor(
    endpoint: Endpoint,
    target: RequestTarget,
    principal: Principal | undefined,
    plan: PlanTerms | undefined,
    req: IncomingMessage,
    trustedProxies: readonly string[],
    requestId: string | undefined = undefined,
  ) {
    this.endpoint = endpoint;
    this.target = target;
    this.principal = principal;
    this.plan = plan;
    this.requestId = requestId;
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
