import type { IncomingMessage } from "node:http";
import type { GatewayConfig, RateSpec } from "../config/types.js";
import { dedicatedPointer } from "../errors/dedicated-pointer.js";
import { GatewayError } from "../errors/table.js";
import type { Family, Outgoing } from "../families/family.js";
import { familyTable } from "../families/table.js";
import { TrustedProxies } from "../http/client-address.js";
import { HostResolver } from "../http/host.js";
import { rawHeader } from "../http/raw-headers.js";
import { parseTarget } from "../http/target.js";
import type { CallRefusal, PassedCall } from "../jsonrpc/check.js";
import { KeyLookup } from "../keys/digest.js";
import { bearerOfProtocols } from "../keys/jwt.js";
import type { KeyRules } from "../keys/key-settings.js";
import { KEY_PREFIX, type KeyStore, looksLikeKey, type Principal } from "../keys/types.js";
import { type RateLimiter, TokenBuckets } from "../limits/token-bucket.js";
import { PlanBook, type PlanTerms, reachesArchive } from "../plans/plan-terms.js";
import { QuotaHold } from "../plans/quota-hold.js";
import { LocalQuotaLedger, type QuotaDecision, type QuotaLedger } from "../plans/quota-ledger.js";
import type { Endpoint, FamilyName, Mount } from "../registry/types.js";
import { passedTraceParent } from "../tracing/trace-parent.js";
import type { RequestTrace } from "../tracing/tracing.js";
import type { UpstreamGroup } from "../upstream/group.js";
import type { UpstreamCall } from "../upstream/policy.js";
import type { UpstreamTable } from "../upstream/upstreams.js";
import { Admitted } from "./admitted.js";
import { UpstreamPlanner } from "./plan-upstream.js";

/**
 * The request pipeline. Every HTTP request and every WebSocket message passes these stages, in order:
 *
 *   1. resolveEndpoint   Host → the registry's endpoint for the label              HTTP request, WS upgrade
 *   2. admitCaller       the key segment → principal (or a public client)          HTTP request, WS upgrade
 *   3. pickMount         the path → the mount → its family (families/table.ts)     HTTP request
 *      pickWebSocketMount  the same for a socket: the mount of the label's root      WS upgrade
 *   4. family authorizes the family parses the message, checks it on the registry  HTTP request, WS message
 *   5. chargeRate        the caller's call rate and its plan's compute-unit rate   HTTP request, WS message
 *      holdQuota         the plan's daily and monthly quota, in compute units      HTTP request, WS message
 *   6. planUpstream      the label's upstreams, and the request's caps              HTTP request
 *      upstreamGroup     the label's upstreams a socket opens on                   WS upgrade
 *   7. relay             the one asynchronous tail (pipeline/relay.ts)             HTTP request, WS message
 *
 * Stages 1–6 are plain synchronous functions: each returns a value or throws a GatewayError (but for a
 * quota that a ledger shared through Redis must ask it about: then holdQuota's hold is a promise). None
 * calls another stage; stages 4 and 5 ask the planner of stage 6 (plan-upstream.ts) what it will make of
 * a call (a range too wide for one node, a read the archive tier answers at once), without planning it. The transports run them: pipeline/http.ts for a request (reading the body
 * between the two halves of stage 4), ws/upgrade.ts at a WebSocket upgrade and ws/message-intake.ts for each
 * message on it. The README's request-flow diagram is this list.
 *
 * Much of the order is in the types: each stage takes the value of the stage before it (Resolved,
 * Admitted, Mounted, the family's Authorized or the message's CheckedMessage, Charged), and Resolved,
 * Mounted and Charged carry a brand no other module can write (an Admitted is made of a Resolved), so a
 * transport cannot call stages 2, 3, 4 or 6 before the ones they depend on: test/pipeline/stage-order.test.ts
 * holds such calls, which must not compile. What the types do not hold: stage 4's value has no brand (a
 * transport could hand stage 5 a message it made itself), and nothing makes a transport take holdQuota's
 * hold before planUpstream; pipeline/http.ts and ws/message-intake.ts are the two places that must. A new
 * stage takes the value of the one before it and gives the next its own.
 */
export class Stages {
  readonly #config: GatewayConfig;
  readonly #endpoints: ReadonlyMap<string, Endpoint>;
  readonly #hosts: HostResolver;
  readonly #trustedProxies: TrustedProxies;
  readonly #keys: KeyLookup;
  readonly #limiter: RateLimiter;
  readonly #plans: PlanBook;
  readonly #quotas: QuotaLedger;
  readonly #families: Readonly<Record<FamilyName, Family>>;
  readonly #planner: UpstreamPlanner;

  constructor(options: {
    config: GatewayConfig;
    endpoints: ReadonlyMap<string, Endpoint>;
    keys: KeyStore;
    upstreams: UpstreamTable;
    limiter?: RateLimiter;
    quotas?: QuotaLedger;
  }) {
    this.#config = options.config;
    this.#endpoints = options.endpoints;
    this.#hosts = new HostResolver(options.config.domain, options.config.publicHosts);
    this.#trustedProxies = new TrustedProxies(options.config.trustedProxies);
    this.#keys = new KeyLookup(options.keys);
    this.#limiter = options.limiter ?? new TokenBuckets();
    this.#plans = new PlanBook(options.config.plans);
    this.#quotas = options.quotas ?? new LocalQuotaLedger();
    this.#planner = new UpstreamPlanner(options.config, options.upstreams);
    this.#families = familyTable({
      limits: options.config.limits,
      support: options.config.support,
      callRefusal: (mounted, call) => this.#planner.callRefusal(mounted, call),
    });
  }

  /** 1. The endpoint the request's one Host names; BAD_HOST, UNKNOWN_NETWORK or HEADERS_TOO_LARGE. */
  resolveEndpoint(req: IncomingMessage): Resolved {
    const { maxHeaders } = this.#config.limits;
    if (req.rawHeaders.length / 2 > maxHeaders) throw new GatewayError("HEADERS_TOO_LARGE", { maxHeaders });
    const host = this.#hosts.resolve(req.rawHeaders, req.url ?? "/");
    const endpoint = this.#endpoints.get(host.label);
    if (endpoint === undefined || (host.kind === "public" && !endpoint.public))
      throw new GatewayError("UNKNOWN_NETWORK");
    return { endpoint, publicHost: host.kind === "public" } as Resolved;
  }

  /**
   * 2. Splits the target and checks the key: UNAUTHORIZED, NETWORK_FORBIDDEN or BAD_PATH. On a public
   * host a first segment that looks like a key is one, and a wrong key is refused like anywhere else.
   */
  admitCaller(resolved: Resolved, req: IncomingMessage, requestId?: string, trace?: RequestTrace): Admitted {
    const { endpoint, publicHost } = resolved;
    const target = parseTarget(
      req.url ?? "/",
      !publicHost || ((first) => first.startsWith(KEY_PREFIX)),
      this.#isKey,
    );
    const principal =
      publicHost && target.key === undefined ? undefined : this.#authenticate(target.key, endpoint);
    const plan = principal === undefined ? undefined : this.#plans.terms(principal.plan);
    const admitted = new Admitted(
      resolved,
      target,
      principal,
      plan,
      req,
      this.#trustedProxies,
      requestId,
      trace ?? passedTraceParent(req.rawHeaders),
    );
    if (principal?.rules !== undefined) {
      try {
        checkKeySettings(principal.rules, admitted, req);
      } catch (error) {
        if (error instanceof GatewayError) error.keyId = principal.keyId;
        throw error;
      }
    }
    return admitted;
  }

  /**
   * 3. The mount the path falls under (mounts are ordered longest first; "/" takes the rest) and the
   * family that serves it; NOT_FOUND, or DEDICATED_ONLY_INTERFACE under a dedicated-only path.
   */
  pickMount(admitted: Admitted): Mounted {
    const { endpoint, target } = admitted;
    for (const iface of endpoint.dedicatedOnly) {
      if (iface.paths.some((p) => target.path === p || target.path.startsWith(`${p}/`))) {
        throw new GatewayError("DEDICATED_ONLY_INTERFACE", {
          interface: iface.name,
          ...dedicatedPointer(this.#config.support),
        });
      }
    }
    for (const mount of endpoint.mounts) {
      if (mount.path === "/" || target.path === mount.path || target.path.startsWith(`${mount.path}/`)) {
        const depth = mount.path === "/" ? 0 : mount.path.split("/").length - 1;
        const segments = depth === 0 ? target.segments : target.segments.slice(depth);
        return { admitted, mount, family: this.#families[mount.policy.family], segments } as Mounted;
      }
    }
    throw new GatewayError("NOT_FOUND");
  }

  /**
   * 3, at a WebSocket upgrade: the mount whose JSON-RPC dialect the connection speaks. The socket lives at
   * the key itself: `/KEY`, or `/KEY/` as SDKs send what the user typed; NOT_FOUND for anything below.
   */
  pickWebSocketMount(admitted: Admitted): Mounted {
    if (admitted.target.segments.length > 0) throw new GatewayError("NOT_FOUND");
    // codegen refuses a WebSocket endpoint without a JSON-RPC interface to relay over it
    const mount = admitted.endpoint.mounts.find((m) => m.policy.jsonrpc !== undefined);
    if (mount === undefined)
      throw new GatewayError("WEBSOCKET_NOT_OFFERED", { label: admitted.endpoint.label });
    const segments: readonly string[] = [];
    return { admitted, mount, family: this.#families[mount.policy.family], segments } as Mounted;
  }

  /**
   * 5. Takes the message's calls from the caller's call rate and its compute units from its plan's
   * compute-unit rate, or throws RATE_LIMITED with Retry-After and RateLimit-* (those of the limit it hit);
   * REQUEST_OVER_BURST when the message costs more than the limit's burst, which no wait would let through.
   */
  chargeRate<Message extends { readonly cost: number; readonly computeUnits: number }>(
    mounted: Mounted,
    message: Message,
  ): Charged<Message> {
    const { admitted } = mounted;
    const rate: RateSpec = admitted.principal?.rate ?? this.#config.limits.publicRate;
    this.#take(admitted.clientId, rate, message.cost, "calls");
    const plan = admitted.plan;
    if (plan !== undefined && message.computeUnits > 0)
      this.#take(`cu:${admitted.clientId}`, plan.computeUnitRate, message.computeUnits, "compute units");
    // The brand is the type's alone: the message goes on as it is, with nothing allocated per request.
    return message as unknown as Charged<Message>;
  }

  /** 4, for a call in a batch or on a WebSocket: why it alone is refused, if it is (plan-upstream.ts). */
  callRefusal(mounted: Mounted, call: PassedCall): CallRefusal | undefined {
    return this.#planner.callRefusal(mounted, call);
  }

  /**
   * 5, before the charge: what a message will cost as stage 6 will plan it (plan-upstream.ts), so that its
   * rate and quota hold what it costs, not its calls' registry price alone.
   */
  plannedUnits(mounted: Mounted, outgoing: Outgoing | undefined, units: number): number {
    return this.#planner.plannedUnits(mounted, outgoing, units);
  }

  /** 5, the quota: what its hold takes, the most the message may cost as served (plan-upstream.ts). */
  quotaUnits(mounted: Mounted, outgoing: Outgoing | undefined, planned: number): number {
    return this.#planner.quotaUnits(mounted, outgoing, planned);
  }

  /** 5, the quota of a WebSocket message's passed calls (plan-upstream.ts). */
  socketQuotaUnits(mounted: Mounted, calls: readonly PassedCall[], single: boolean, planned: number): number {
    return this.#planner.socketQuotaUnits(mounted, calls, single, planned);
  }

  #take(id: string, rate: RateSpec, cost: number, unit: "calls" | "compute units"): void {
    // More than the bucket ever holds: waiting never lets it through, so it must not read as a rate's 429
    // with a Retry-After, which SDKs retry until they give up.
    if (cost > rate.burst) throw new GatewayError("REQUEST_OVER_BURST", { cost, burst: rate.burst, unit });
    const decision = this.#limiter.take(id, rate, cost);
    if (decision.allowed) return;
    // which of the two limits (the key's calls, its plan's compute units) and in what unit: a customer
    // held by the plan's compute units was told only to wait
    throw new GatewayError(
      "RATE_LIMITED",
      { retryAfter: decision.retryAfter, unit, perSecond: rate.perSecond, burst: rate.burst },
      {
        "retry-after": String(decision.retryAfter),
        "ratelimit-limit": String(rate.burst),
        "ratelimit-remaining": String(decision.remaining),
        "ratelimit-reset": String(decision.retryAfter),
      },
    );
  }

  /**
   * 5, then: reserves the message's compute units against its plan's daily and monthly quotas (docs/plans.md),
   * or throws QUOTA_EXCEEDED with Retry-After at the period's end. A shared ledger may need to ask Redis
   * first: then the answer is a promise. Nothing to hold for a public caller or a message that costs
   * nothing. A plan without quotas is counted all the same, against none: a reload may give it one back the
   * same day, and what its keys spent meanwhile is spent.
   */
  holdQuota(
    mounted: Mounted,
    charged: Charged<{ readonly cost: number; readonly computeUnits: number }>,
    units = charged.computeUnits,
  ): QuotaHold | Promise<QuotaHold> | undefined {
    const { admitted } = mounted;
    const plan = admitted.plan;
    const principal = admitted.principal;
    if (plan === undefined || principal === undefined || units <= 0) return undefined;
    const scope = quotaScopeOf(plan, principal);
    const hold = new QuotaHold(this.#quotas, scope, principal, plan, units);
    const decided = this.#quotas.take(scope, hold.limits, units, plan.computeUnitRate.perSecond);
    if (decided instanceof Promise)
      return decided.then((decision) => this.#granted(mounted, charged, hold, decision));
    return this.#granted(mounted, charged, hold, decided);
  }

  /**
   * 5, at a WebSocket upgrade: refuses a key whose quota no call could pass now (QUOTA_EXCEEDED, the error
   * its HTTP call would get), and takes nothing from it. A rate is not looked at: it is a moment's, and an
   * SDK whose socket failed to open (ethers', viem's) does not open it again, where each message over the
   * rate is refused on its own. A promise when the quota's ledger must ask first (Redis, or the account
   * store at a count's start).
   */
  checkSpendable(mounted: Mounted): Promise<void> | undefined {
    const { admitted } = mounted;
    const plan = admitted.plan;
    const principal = admitted.principal;
    if (plan === undefined || principal === undefined) return undefined;
    if (plan.dailyQuota <= 0 && plan.monthlyQuota <= 0) return undefined;
    const scope = quotaScopeOf(plan, principal);
    const hold = new QuotaHold(this.#quotas, scope, principal, plan, 1);
    const probe = (decision: QuotaDecision): void => hold.granted(decision).settle(0);
    const decided = this.#quotas.take(scope, hold.limits, 1, plan.computeUnitRate.perSecond);
    if (decided instanceof Promise) return decided.then(probe);
    probe(decided);
    return undefined;
  }

  /**
   * The hold, or QUOTA_EXCEEDED with what stage 5's rate took given back: a spent quota is no rate, and a
   * caller told 402 over and over must not be told 429 "retry in a second" once its refusals drain its rate.
   */
  #granted(
    mounted: Mounted,
    charged: Charged<{ readonly cost: number; readonly computeUnits: number }>,
    hold: QuotaHold,
    decision: QuotaDecision,
  ): QuotaHold {
    if (!decision.allowed) {
      const { admitted } = mounted;
      this.#limiter.giveBack(
        admitted.clientId,
        admitted.principal?.rate ?? this.#config.limits.publicRate,
        charged.cost,
      );
      const plan = admitted.plan;
      if (plan !== undefined)
        this.#limiter.giveBack(`cu:${admitted.clientId}`, plan.computeUnitRate, charged.computeUnits);
    }
    return hold.granted(decision);
  }

  /**
   * 6. The upstream call: the mount's upstreams, the caller's path and query, the answer's size cap, and the
   * head a node must have reached to take it (plan-upstream.ts).
   */
  planUpstream(
    mounted: Mounted,
    charged: Charged<{ readonly outgoing: Outgoing | undefined }>,
  ): UpstreamCall {
    const outgoing = charged.outgoing;
    // a message with nothing to send was answered at stage 4 and never gets here
    if (outgoing === undefined) throw new Error("stage 6 reached by a message with nothing to send");
    return this.#planner.call(mounted, outgoing);
  }

  /**
   * 6, before the plan: the nodes of the filters the message names that only another instance or worker
   * saw made, asked of Redis with `sharedLimits` (plan-upstream.ts). A promise only when it must ask; it
   * never fails.
   */
  recallHandles(
    mounted: Mounted,
    charged: Charged<{ readonly outgoing: Outgoing | undefined }>,
  ): Promise<void> | undefined {
    const outgoing = charged.outgoing;
    return outgoing === undefined ? undefined : this.#planner.recallHandles(mounted, outgoing);
  }

  /** 6, at a WebSocket upgrade: the upstreams the connection's socket is opened to; NO_UPSTREAM without any. */
  upstreamGroup(mounted: Mounted): UpstreamGroup {
    return this.#planner.group(mounted);
  }

  /** 6, at a WebSocket upgrade: the archive upstreams its old reads may go to, for a key that may reach them. */
  archiveGroup(mounted: Mounted): ReturnType<UpstreamPlanner["archiveGroup"]> {
    return this.#planner.archiveGroup(mounted);
  }

  /** Whether a key-shaped word of a keyed call's query is a key: it is not sent to the node (http/target.ts). */
  readonly #isKey = (candidate: string): boolean => this.#keys.principal(candidate) !== undefined;

  #authenticate(key: string | undefined, endpoint: Endpoint): Principal {
    if (!looksLikeKey(key)) throw new GatewayError("UNAUTHORIZED");
    const principal = this.#keys.principal(key);
    if (principal === undefined) throw new GatewayError("UNAUTHORIZED");
    const forbidden =
      principal.networks !== "*" && !principal.networks.has(endpoint.code)
        ? new GatewayError("NETWORK_FORBIDDEN", { network: endpoint.code })
        : endpoint.nodeClass === "archive" &&
            !reachesArchive(this.#plans.terms(principal.plan).archive, principal.archive)
          ? new GatewayError("NETWORK_FORBIDDEN", {
              network: endpoint.code,
              reason: "the key has no archive access",
            })
          : undefined;
    if (forbidden === undefined) return principal;
    // the key's own error, in its usage
    forbidden.keyId = principal.keyId;
    throw forbidden;
  }
}

/**
 * Whose quota a key spends: its own line's (a rotated key's first predecessor's), or, on a plan whose quota
 * is the account's, the account's keys of the key's plan. A plan removed while keys hold it serves them on
 * the shared plan's terms (PlanBook), and they spend one quota among themselves, not the account's
 * shared-plan keys': as the dashboard's meter (control/accounts/overview.ts) and the usage counts a quota
 * starts from (keys/quota-spent.ts) count them, by the key's own plan.
 */
function quotaScopeOf(plan: PlanTerms, principal: Principal): string {
  return plan.quotaPer === "account" ? `${principal.accountId}:${principal.plan}` : principal.quotaScope;
}

/**
 * 2, for a key whose owner restricted it (docs/plans.md, "Key settings"): the client's address, the page
 * it came from, and its JWT, at each HTTP request and at a WebSocket's upgrade; KEY_SETTING_REFUSED naming
 * the list, or JWT_REQUIRED with the reason. Methods and contracts are the calls' own (jsonrpc/check.ts).
 */
function checkKeySettings(rules: KeyRules, admitted: Admitted, req: IncomingMessage): void {
  if (!rules.allowsIp(admitted.ip)) throw new GatewayError("KEY_SETTING_REFUSED", { setting: "ips" });
  // read from the raw headers, and only when set: req.headers builds an object of every header
  if (rules.limitsOrigins && !rules.allowsOrigin(rawHeader(req.rawHeaders, "origin")))
    throw new GatewayError("KEY_SETTING_REFUSED", { setting: "origins" });
  if (rules.jwt === undefined) return;
  // a browser's WebSocket, which cannot send the header, names the token as a subprotocol (a header of
  // another scheme, a proxy's Basic, leaves it the token's carrier)
  const header = rawHeader(req.rawHeaders, "authorization", true);
  const verdict = rules.jwt.verdict(
    header !== undefined && /^Bearer /i.test(header)
      ? header
      : (bearerOfProtocols(rawHeader(req.rawHeaders, "sec-websocket-protocol")) ?? header),
  );
  if (typeof verdict !== "number")
    throw new GatewayError(
      "JWT_REQUIRED",
      { reason: verdict },
      { "www-authenticate": 'Bearer realm="api key"' },
    );
  admitted.tokenValidUntilMs = verdict;
}

declare const charged: unique symbol;
declare const resolved: unique symbol;
declare const mounted: unique symbol;

/**
 * Stage 5's value: a message whose cost the caller's rate allowed. Only `chargeRate` makes one (the brand,
 * which exists in the types alone), so a stage that takes it cannot run before the charge.
 */
export type Charged<Message> = Message & { readonly [charged]: true };

/** Stage 1's value; only `resolveEndpoint` makes one (its brand, as Charged's, is the types' alone). */
export interface Resolved {
  readonly endpoint: Endpoint;
  readonly publicHost: boolean;
  readonly [resolved]: true;
}

/** Stage 3's value: the admitted request, its mount, the family serving it, and the path below the mount. */
export interface Mounted {
  readonly admitted: Admitted;
  readonly mount: Mount;
  readonly family: Family;
  readonly segments: readonly string[];
  readonly [mounted]: true;
}
