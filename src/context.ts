import type { IncomingMessage, ServerResponse } from "node:http";
import type { GatewayConfig, Limits } from "./config/types.js";
import type { RequestTarget } from "./http/target.js";
import type { Principal } from "./keys/types.js";
import type { Endpoint, Mount } from "./registry/types.js";
import type { UpstreamSignal } from "./upstream/forward.js";
import type { UpstreamGroup } from "./upstream/upstreams.js";

/** Everything a family handler needs for one request, resolved by the core before it runs. */
export interface CallContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly endpoint: Endpoint;
  readonly mount: Mount;
  readonly target: RequestTarget;
  /** Undefined on a public no-key endpoint. */
  readonly principal: Principal | undefined;
  readonly limits: Limits;
  readonly support: GatewayConfig["support"];
  /** Aborts upstream requests when the client goes away. */
  readonly signal: UpstreamSignal;
  /** Takes `cost` tokens from the caller's rate limit; throws RATE_LIMITED when they are not there. */
  charge(cost: number): void;
  /** Adds fields to this request's access-log line. */
  note(fields: Record<string, string | number>): void;
  /** The upstreams serving this endpoint's mount; throws NO_UPSTREAM when none is configured. */
  upstreams(): UpstreamGroup;
}

/** The detail every "not on your plan" error carries: how to get the capability. */
export function dedicatedPointer(support: GatewayConfig["support"]): Record<string, string> {
  return {
    howToGet: "Order a dedicated node, or ask support to enable it",
    dedicatedNode: support.dedicatedNodeUrl,
    support: support.email,
  };
}
