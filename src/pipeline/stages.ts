import type { IncomingMessage } from "node:http";
import type { TierPlan } from "../answers/archive.js";
import { planRanges, type RangePlan } from "../answers/range-plan.js";
import { isHeadCall, type ReadNeed } from "../answers/read-need.js";
import { type BatchRead, idKey } from "../cache/batch-cached.js";
import type { CacheRead } from "../cache/cache-read.js";
import type { GatewayConfig, RateSpec } from "../config/types.js";
import { dedicatedPointer } from "../errors/dedicated-pointer.js";
import { GatewayError } from "../errors/table.js";
import type { Family, Outgoing } from "../families/family.js";
import { familyTable } from "../families/table.js";
import { HostResolver } from "../http/host.js";
import { rawHeader } from "../http/raw-headers.js";
import { parseTarget } from "../http/target.js";
import { KeyLookup } from "../keys/digest.js";
import type { KeyRules } from "../keys/key-settings.js";
import { KEY_PREFIX, type KeyStore, looksLikeKey, type Principal } from "../keys/types.js";
import { type RateLimiter, TokenBuckets } from "../limits/token-bucket.js";
import { archiveUnits } from "../plans/compute-units.js";
import { PlanBook } from "../plans/plan-terms.js";
import { QuotaHold } from "../plans/quota-hold.js";
import { LocalQuotaLedger, type QuotaLedger } from "../plans/quota-ledger.js";
import type { Endpoint, FamilyName, Mount } from "../registry/types.js";
import { passedTraceParent } from "../tracing/trace-parent.js";
import type { RequestTrace } from "../tracing/tracing.js";
import type { UpstreamGroup } from "../upstream/group.js";
import type { UpstreamCall } from "../upstream/policy.js";
import type { UpstreamTable } from "../upstream/upstreams.js";
import { Admitted } from "./admitted.js";

/**
 * The request pipeline. Every HTTP request and every WebSocket message passes these stages, in order:
 *
 *   1. resolveEndpoint   Host → the registry's endpoint for the label              HTTP request, WS upgrade
 *   2. admitCaller       the key segment → principal (or a public client)          HTTP request, WS upgrade
 *   3. pickMount         the path → the mount → its family (families/table.ts)     HTTP request, WS upgrade
 *   4. family authorizes the family parses the message, checks it on the registry  HTTP request, WS message
 *   5. chargeRate        the caller's call rate and its plan's compute-unit rate   HTTP request, WS message
 *      holdQuota         the plan's daily and monthly quota, in compute units      HTTP request, WS message
 *   6. planUpstream      the label's upstreams, and the request's caps              HTTP request, WS upgrade
 *   7. relay             the one asynchronous tail (upstream/policy.ts)            HTTP request, WS message
 *
 * Stages 1–6 are plain synchronous functions: each returns a value or throws a GatewayError, and none
 * reaches back into another (but for a quota that a ledger shared through Redis must ask it about: then
 * holdQuota's hold is a promise). The transports run them: pipeline/http.ts for a request (reading the body
 * between the two halves of stage 4), ws/upgrade.ts at a WebSocket upgrade and ws/message-intake.ts for each
 * message on it. The README's request-flow diagram is this list.
 *
 * The order is in the types: each stage takes the value of the stage before it (Resolved, Admitted,
 * Mounted, the family's Authorized or the message's CheckedMessage, Charged), and only the stage that
 * makes a value can make it (Resolved, Mounted and Charged carry a brand no other module can write, and
 * an Admitted is made of a Resolved), so a transport cannot call a stage before the ones it depends on:
 * test/pipeline/stage-order.test.ts holds such calls, which must not compile. A new
 * stage takes the value of the one before it and gives the next its own.
 */
export class Stages {
  readonly #config: GatewayConfig;
  readonly #endpoints: ReadonlyMap<string, Endpoint>;
  readonly #hosts: HostResolver;
  readonly #keys: KeyLookup;
  readonly #limiter: RateLimiter;
  readonly #plans: PlanBook;
  readonly #quotas: QuotaLedger;
  readonly #upstreams: UpstreamTable;
  readonly #families: Readonly<Record<FamilyName, Family>>;

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
    this.#keys = new KeyLookup(options.keys);
    this.#limiter = options.limiter ?? new TokenBuckets();
    this.#plans = new PlanBook(options.config.plans);
    this.#quotas = options.quotas ?? new LocalQuotaLedger();
    this.#upstreams = options.upstreams;
    this.#families = familyTable(options.config);
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
    const target = parseTarget(req.url ?? "/", !publicHost || ((first) => first.startsWith(KEY_PREFIX)));
    const principal =
      publicHost && target.key === undefined ? undefined : this.#authenticate(target.key, endpoint);
    const plan = principal === undefined ? undefined : this.#plans.terms(principal.plan);
    const admitted = new Admitted(
      resolved,
      target,
      principal,
      plan,
      req,
      this.#config.trustedProxies,
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

  /**
   * 5, before the charge: what a message will cost as stage 6 will plan it, so that its rate and quota hold
   * what it costs, not its calls' registry price alone. A range split into sub-ranges costs a call for each,
   * and a read the archive tier answers at once the archive factor (docs/compute-units.md). A read a full
   * node refuses and the archive tier then answers is priced at settlement: no one can tell before.
   */
  plannedUnits(mounted: Mounted, outgoing: Outgoing | undefined, units: number): number {
    const reads = outgoing?.reads;
    // most calls: no range, and no state at a numbered block (one named by hash is never sent to archive at once)
    if (reads === undefined || units <= 0 || (reads.ranges.length === 0 && reads.stateBlock < 0))
      return units;
    const group = this.#upstreams.group(mounted.admitted.endpoint.label, mounted.mount.path);
    if (group === undefined) return units;
    let planned = units;
    const split = reads.ranges.length === 0 ? undefined : this.#planRanges(reads, group).split;
    if (split !== undefined) planned *= Math.ceil((split.to - split.from + 1) / split.size);
    const tier = this.#tierPlan(mounted, reads, group);
    if (tier?.direct === true && tier.mayArchive)
      planned = archiveUnits(planned, mounted.mount.policy.computeUnits);
    return planned;
  }

  #take(id: string, rate: RateSpec, cost: number, unit: "calls" | "compute units"): void {
    // More than the bucket ever holds: waiting never lets it through, so it must not read as a rate's 429
    // with a Retry-After, which SDKs retry until they give up.
    if (cost > rate.burst) throw new GatewayError("REQUEST_OVER_BURST", { cost, burst: rate.burst, unit });
    const decision = this.#limiter.take(id, rate, cost);
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

  /**
   * 5, then: reserves the message's compute units against its plan's daily and monthly quotas (docs/plans.md),
   * or throws QUOTA_EXCEEDED with Retry-After at the period's end. A shared ledger may need to ask Redis
   * first: then the answer is a promise. Nothing to hold for a public caller, a plan without quotas or a
   * message that costs nothing.
   */
  holdQuota(
    mounted: Mounted,
    charged: Charged<{ readonly computeUnits: number }>,
  ): QuotaHold | Promise<QuotaHold> | undefined {
    const units = charged.computeUnits;
    const { admitted } = mounted;
    const plan = admitted.plan;
    const principal = admitted.principal;
    if (plan === undefined || principal === undefined || !plan.hasQuota || units <= 0) return undefined;
    // an account's keys of one plan spend one quota; a key of another plan on the account spends its own
    const scope = plan.quotaPer === "account" ? `${principal.accountId}:${plan.name}` : principal.quotaScope;
    const hold = new QuotaHold(this.#quotas, scope, principal, plan, units);
    const decided = this.#quotas.take(scope, hold.limits, units, plan.computeUnitRate.perSecond);
    if (decided instanceof Promise) return decided.then((decision) => hold.granted(decision));
    return hold.granted(decided);
  }

  /**
   * 6. The upstream call: the mount's upstreams, the caller's path and query, the answer's size cap, and the
   * head a node must have reached to take it (src/answers/).
   */
  planUpstream(
    mounted: Mounted,
    charged: Charged<{ readonly outgoing: Outgoing | undefined }>,
  ): UpstreamCall {
    const outgoing = charged.outgoing;
    // a message with nothing to send was answered at stage 4 and never gets here
    if (outgoing === undefined) throw new Error("stage 6 reached by a message with nothing to send");
    const { target } = mounted.admitted;
    const group = this.upstreamGroup(mounted);
    const { reads } = outgoing;
    const tier = reads === undefined ? undefined : this.#tierPlan(mounted, reads, group);
    const ranges =
      reads === undefined || reads.ranges.length === 0 ? undefined : this.#planRanges(reads, group);
    return {
      group,
      method: outgoing.method,
      path: outgoing.path ?? target.path,
      query: outgoing.query ?? target.query,
      // the node's logs can name the caller's request too, and its traces join the caller's
      headers: mounted.admitted.nodeHeaders(outgoing.headers),
      trace: typeof mounted.admitted.trace === "object" ? mounted.admitted.trace : undefined,
      body: outgoing.body,
      stream: outgoing.stream,
      write: outgoing.write,
      nodeErrors: mounted.mount.policy.jsonrpc?.nodeErrors,
      limits: this.#config.limits.upstream,
      // A stream stays open while the node pushes: it has no size cap, as it has no end.
      maxBytes: outgoing.stream ? Number.POSITIVE_INFINITY : this.#config.limits.upstream.maxResponseBytes,
      // A read at the head needs the head the label served; one that names a block, that block. A label
      // with one node has nowhere else to send a read that names a block, and the caller most often
      // learned of that block from the node itself (a newHeads notification its head record has not
      // seen): it goes at once, and only a read at the head waits for the node (a head another instance
      // served, through Redis).
      atLeast:
        reads === undefined
          ? -1
          : group.members.length === 1
            ? reads.atHead
              ? group.served.height
              : -1
            : Math.max(
                reads.atHead ? group.served.height : -1,
                reads.highestBlock,
                ranges?.highestBlock ?? -1,
              ),
      reads,
      split: ranges?.split,
      tier,
      // a read by hash that one node answers null may find the block on another
      byHash: tier === undefined && reads !== undefined && reads.byHash && group.members.length > 1,
      cache: ranges?.split === undefined ? this.#cacheRead(mounted, group, outgoing) : undefined,
      cacheBatch:
        tier === undefined &&
        ranges?.split === undefined &&
        !(reads?.byHash === true && group.members.length > 1)
          ? this.#cacheBatch(mounted, group, outgoing)
          : undefined,
      exclude: undefined,
    };
  }

  /** 6, for a single call on a label whose cache is on: what the cache may answer it with (src/cache/). */
  #cacheRead(mounted: Mounted, group: UpstreamGroup, outgoing: Outgoing): CacheRead | undefined {
    const cache = group.cache;
    if (outgoing.restCache !== undefined && cache !== undefined)
      return cache.takes(outgoing.restCache, mounted.admitted);
    const call = outgoing.single;
    const reads = mounted.mount.policy.jsonrpc?.reads;
    if (call === undefined || cache === undefined || reads === undefined || outgoing.write) return undefined;
    return cache.readOf(reads, call, isHeadCall(call, mounted.mount.head), mounted.admitted);
  }

  /**
   * 6, for a batch on a label whose cache is on: each call with what the cache may answer it with, or none
   * when no call may be, or when two calls share an id (their answers could not be told apart).
   */
  #cacheBatch(mounted: Mounted, group: UpstreamGroup, outgoing: Outgoing): readonly BatchRead[] | undefined {
    const calls = outgoing.batch;
    const reads = mounted.mount.policy.jsonrpc?.reads;
    const cache = group.cache;
    if (calls === undefined || cache === undefined || reads === undefined || outgoing.write) return undefined;
    const ids = new Set<string>();
    let any = false;
    const batch = calls.map((call) => {
      // by value: ids written differently ("a", "\u0061") are still one id in the node's answers
      if (call.id !== undefined) ids.add(idKey(call.id));
      const kept = cache.readOf(reads, call, isHeadCall(call, mounted.mount.head), mounted.admitted);
      if (kept !== undefined) any = true;
      return { call, read: kept };
    });
    return any && ids.size === calls.length ? batch : undefined;
  }

  /** 6, for range calls: their limits checked, and a split planned (src/answers/range-plan.ts). */
  #planRanges(reads: ReadNeed, group: UpstreamGroup): RangePlan {
    try {
      return planRanges(reads, group.served.height, this.#config.blockRanges[group.label]);
    } catch (error) {
      group.answers.add("range_refused");
      throw error;
    }
  }

  /**
   * 6, for a read of state at a numbered block on a mainnet full label whose network has an archive
   * endpoint: how it may reach the archive nodes (src/answers/archive.ts). None for a block above the
   * label's head: it is not there yet, which no archive node changes.
   */
  #tierPlan(mounted: Mounted, reads: ReadNeed, group: UpstreamGroup): TierPlan | undefined {
    const { endpoint, principal } = mounted.admitted;
    const rule = mounted.mount.policy.jsonrpc?.reads?.archive;
    const archiveLabel = endpoint.archiveLabel;
    const named = reads.stateBlock >= 0 || reads.stateByHash;
    if (rule === undefined || archiveLabel === undefined || !named) return undefined;
    const head = group.served.height;
    if (reads.single && head >= 0 && reads.stateBlock > head) return undefined;
    return {
      // a block named by hash is not known to be old until a full node says so; a batch goes to a full node
      // first, and only the calls it refuses go on
      direct:
        reads.single && head >= 0 && reads.stateBlock >= 0 && reads.stateBlock < head - rule.fullHistory,
      batch: reads.single ? undefined : reads.stateCalls,
      archiveLabel,
      archiveGroup: this.#upstreams.group(archiveLabel, mounted.mount.path),
      mayArchive: principal?.archive === true || mounted.admitted.plan?.archive === true,
      missingState: rule.missingState,
    };
  }

  /** 6, at a WebSocket upgrade: the upstreams the connection's socket is opened to; NO_UPSTREAM without any. */
  upstreamGroup(mounted: Mounted): UpstreamGroup {
    const group = this.#upstreams.group(mounted.admitted.endpoint.label, mounted.mount.path);
    if (group === undefined)
      throw new GatewayError("NO_UPSTREAM", { reason: "no upstream is configured for this endpoint" });
    return group;
  }

  #authenticate(key: string | undefined, endpoint: Endpoint): Principal {
    if (!looksLikeKey(key)) throw new GatewayError("UNAUTHORIZED");
    const principal = this.#keys.principal(key);
    if (principal === undefined) throw new GatewayError("UNAUTHORIZED");
    const forbidden =
      principal.networks !== "*" && !principal.networks.has(endpoint.code)
        ? new GatewayError("NETWORK_FORBIDDEN", { network: endpoint.code })
        : endpoint.nodeClass === "archive" && !principal.archive && !this.#plans.terms(principal.plan).archive
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
 * 2, for a key whose owner restricted it (docs/plans.md, "Key settings"): the client's address, the page
 * it came from, and its JWT, at each HTTP request and at a WebSocket's upgrade; KEY_SETTING_REFUSED naming
 * the list, or JWT_REQUIRED with the reason. Methods and contracts are the calls' own (jsonrpc/check.ts).
 */
function checkKeySettings(rules: KeyRules, admitted: Admitted, req: IncomingMessage): void {
  if (!rules.allowsIp(admitted.ip)) throw new GatewayError("KEY_SETTING_REFUSED", { setting: "ips" });
  // read from the raw headers, and only when set: req.headers builds an object of every header
  if (rules.limitsOrigins && !rules.allowsOrigin(rawHeader(req.rawHeaders, "origin")))
    throw new GatewayError("KEY_SETTING_REFUSED", { setting: "origins" });
  const refusal = rules.jwt?.refusal(rawHeader(req.rawHeaders, "authorization", true));
  if (refusal !== undefined)
    throw new GatewayError(
      "JWT_REQUIRED",
      { reason: refusal },
      { "www-authenticate": 'Bearer realm="api key"' },
    );
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
