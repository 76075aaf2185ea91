import type { IncomingMessage, ServerResponse } from "node:http";
import type { Admission, Admitted } from "./admission.js";
import type { GatewayConfig, Limits } from "./config/types.js";
import { GatewayError } from "./errors/table.js";
import type { RequestTarget } from "./http/target.js";
import type { Principal } from "./keys/types.js";
import type { AccessLine } from "./log.js";
import type { Endpoint, Mount } from "./registry/types.js";
import type { UpstreamGroup, UpstreamTable } from "./upstream/upstreams.js";

/**
 * Everything a family handler needs for one request, resolved by the core before it runs. A class
 * rather than an object literal with closures: one per request, so one shape and no closures to allocate.
 */
export class CallContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly endpoint: Endpoint;
  readonly mount: Mount;
  readonly target: RequestTarget;
  /** Undefined on a public no-key endpoint. */
  readonly principal: Principal | undefined;
  readonly limits: Limits;
  readonly support: GatewayConfig["support"];
  /** This request's access-log line. */
  readonly access: AccessLine;
  /** The id an error answers with: a single call's own id once its body is parsed. */
  replyId: string | undefined = undefined;
  readonly #admission: Admission;
  readonly #admitted: Admitted;
  readonly #upstreams: UpstreamTable;

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    mount: Mount,
    admitted: Admitted,
    services: { admission: Admission; upstreams: UpstreamTable; config: GatewayConfig },
    access: AccessLine,
  ) {
    this.req = req;
    this.res = res;
    this.endpoint = admitted.endpoint;
    this.mount = mount;
    this.target = admitted.target;
    this.principal = admitted.principal;
    this.limits = services.config.limits;
    this.support = services.config.support;
    this.access = access;
    this.#admission = services.admission;
    this.#admitted = admitted;
    this.#upstreams = services.upstreams;
  }

  /** Takes `cost` tokens from the caller's rate limit; throws RATE_LIMITED when they are not there. */
  charge(cost: number): void {
    this.#admission.charge(this.#admitted, cost);
  }

  /** The upstreams serving this endpoint's mount; throws NO_UPSTREAM when none is configured. */
  upstreams(): UpstreamGroup {
    const group = this.#upstreams.group(this.endpoint.label, this.mount.path);
    if (group === undefined)
      throw new GatewayError("NO_UPSTREAM", { reason: "no upstream is configured for this endpoint" });
    return group;
  }
}

/** The detail every "not on your plan" error carries: how to get the capability. */
export function dedicatedPointer(support: GatewayConfig["support"]): Record<string, string> {
  return {
    howToGet: "Order a dedicated node, or ask support to enable it",
    dedicatedNode: support.dedicatedNodeUrl,
    support: support.email,
  };
}
