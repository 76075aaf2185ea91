import type { IncomingMessage } from "node:http";
import { clientAddress, type TrustedProxies } from "../http/client-address.js";
import { clientNet } from "../http/client-net.js";
import { REQUEST_ID_HEADER } from "../http/request-id.js";
import type { RequestTarget } from "../http/target.js";
import type { Principal } from "../keys/types.js";
import type { PlanTerms } from "../plans/plan-terms.js";
import type { Endpoint } from "../registry/types.js";
import { TRACE_PARENT_HEADER } from "../tracing/trace-parent.js";
import type { RequestTrace } from "../tracing/tracing.js";
import type { Resolved } from "./stages.js";

/** Stage 2's value: a request that passed admission, where it goes and on whose behalf. */
export class Admitted {
  readonly endpoint: Endpoint;
  readonly target: RequestTarget;
  /** Undefined on a public no-key endpoint. */
  readonly principal: Principal | undefined;
  /** The terms of the principal's plan (docs/plans.md); undefined with the principal. */
  readonly plan: PlanTerms | undefined;
  /** The request's id (http/request-id.ts), sent on to the node: an HTTP request's, or a WebSocket's upgrade's. */
  readonly requestId: string | undefined;
  /**
   * How the node's request joins the caller's trace (docs/operations.md, "Traces"): the request's span when
   * tracing is on, else the caller's own well-formed `traceparent`, passed on as it came; or neither.
   */
  readonly trace: RequestTrace | string | undefined;
  /**
   * When the JWT the key's settings required stops being valid (ms since the epoch): a WebSocket connection
   * opened with it closes then (ws/connection.ts). Set at admission.
   */
  tokenValidUntilMs: number | undefined = undefined;
  // Let go once the address is known: a WebSocket connection keeps its Admitted for its whole life.
  #req: IncomingMessage | undefined;
  readonly #trustedProxies: TrustedProxies;
  #ip: string | undefined = undefined;
  #net: string | undefined = undefined;
  #publicId: string | undefined = undefined;
  #stateOwner: string | undefined = undefined;

  /** Made of stage 1's value, which only stage 1 makes: no request is admitted before its endpoint is known. */
  constructor(
    resolved: Resolved,
    target: RequestTarget,
    principal: Principal | undefined,
    plan: PlanTerms | undefined,
    req: IncomingMessage,
    trustedProxies: TrustedProxies,
    requestId: string | undefined = undefined,
    trace: RequestTrace | string | undefined = undefined,
  ) {
    this.endpoint = resolved.endpoint;
    this.target = target;
    this.principal = principal;
    this.plan = plan;
    this.requestId = requestId;
    this.trace = trace;
    this.#req = req;
    this.#trustedProxies = trustedProxies;
  }

  /**
   * The headers of the node's request, as undici's flat list of names and values: `headers`, the request's
   * id, and the caller's trace: with tracing off the caller's own `traceparent`; with tracing on, each HTTP
   * attempt adds its own span's (upstream/call-run.ts). A list, not an object: an object spread with the
   * id's member, made for every request, cost the relay 11 µs of CPU a request (docs/performance.md).
   */
  nodeHeaders(headers: readonly string[]): readonly string[] {
    const { requestId, trace } = this;
    const passed = typeof trace === "string" ? trace : undefined;
    if (requestId === undefined && passed === undefined) return headers;
    const all = headers.slice();
    if (requestId !== undefined) all.push(REQUEST_ID_HEADER, requestId);
    if (passed !== undefined) all.push(TRACE_PARENT_HEADER, passed);
    return all;
  }

  /** The client's address, worked out on first use: a keyed HTTP call counts against its key and never asks. */
  get ip(): string {
    if (this.#ip === undefined) {
      this.#ip = clientAddress(this.#req as IncomingMessage, this.#trustedProxies);
      this.#req = undefined;
    }
    return this.#ip;
  }

  /**
   * The network the client's address is counted by (http/client-net.ts): an IPv4 address, an IPv6 address's
   * /64, so that one subscriber's many addresses share the public rate and the per-address connection cap.
   */
  get net(): string {
    if (this.#net === undefined) this.#net = clientNet(this.ip);
    return this.#net;
  }

  /**
   * Whose the states a node makes for the caller (filters: upstream/node-states.ts) are: its `clientId`, and
   * for a key held to a contracts list, that list's too. A filter made under other settings (eth_newFilter {}
   * before its owner set the list) is then another caller's, refused FILTER_NOT_FOUND: polled, it answered
   * the logs of contracts the list leaves out, as eth_getLogs over every contract would. SDKs make the filter
   * again on that answer, and the new one is checked against the list (as a WebSocket is closed, to come
   * back under new settings).
   */
  get stateOwner(): string {
    const tag = this.principal?.rules?.contractsTag;
    if (tag === undefined) return this.clientId;
    this.#stateOwner ??= `${this.clientId}/${tag}`;
    return this.#stateOwner;
  }

  /** Who the rate limit and connection caps count against: a key's id, or the client's network (`net`). */
  get clientId(): string {
    if (this.principal !== undefined) return this.principal.keyId;
    if (this.#publicId === undefined) this.#publicId = `ip:${this.net}`;
    return this.#publicId;
  }
}
