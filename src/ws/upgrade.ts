import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { learnSocketHeights, readsHeights } from "../answers/examined.js";
import { filterSpan } from "../answers/range-plan.js";
import { readNeed } from "../answers/read-need.js";
import type { GatewayConfig, Limits } from "../config/types.js";
import { errorFormOf, upgradeRefusal } from "../errors/respond.js";
import { type ErrorCode, GatewayError } from "../errors/table.js";
import { REQUEST_ID_HEADER, requestIdFor } from "../http/request-id.js";
import { BEARER_PROTOCOL } from "../keys/jwt.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { HeldCalls } from "../limits/held-calls.js";
import type { Logger } from "../log.js";
import { type GatewayMetrics, resultOf, type WebSocketCounts } from "../metrics/gateway-metrics.js";
import type { Admitted } from "../pipeline/admitted.js";
import type { ErrorBoundary } from "../pipeline/boundary.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import type { PlanBook, PlanTerms } from "../plans/plan-terms.js";
import { callerTraceParent, TRACE_PARENT_HEADER } from "../tracing/trace-parent.js";
import type { RequestTrace, Tracing } from "../tracing/tracing.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { openWebSocket } from "../upstream/policy.js";
import type { Upstream } from "../upstream/upstreams.js";
import { type ArchiveAsk, archiveAsk } from "./archive-reads.js";
import { CachedCalls } from "./cached-calls.js";
import { CLOSE } from "./close-codes.js";
import { Connection } from "./connection.js";
import { type ConnectionCounts, LocalConnectionCounts } from "./connection-counts.js";
import { checkHandshake, invalid } from "./handshake.js";
import { type HeadAsk, headAsk } from "./head-reads.js";
import { type BridgedMount, openHttpBridge } from "./http-bridge.js";
import type { NodeSocket } from "./node-socket.js";

/**
 * The WebSocket transport of the pipeline: `wss://<label>.{domain}/<API_KEY>`. At the upgrade it runs
 * stages 1 to 3 and 6, and opens the upstream socket, before the client's handshake completes, so every
 * refusal is an HTTP response. Each message on the connection then passes stages 4 and 5
 * (message-intake.ts) and 7 (message-sender.ts).
 */
/** The most key withdrawals remembered for the upgrades still opening (#withdrawnAt): about 70 bytes each. */
const WITHDRAWALS_KEPT = 10_000;

export class WebSocketGateway implements WebSocketCounts {
  readonly #config: GatewayConfig;
  readonly #stages: Stages;
  readonly #logger: Logger;
  readonly #boundary: ErrorBoundary;
  readonly #server: WebSocketServer;
  /** Each open connection: who it counts against, and its label. */
  /**
   * When each key was last withdrawn or changed, in that order: an upgrade admitted before then is closed as
   * it opens. Kept only as long as an upgrade may take to open, so revocations do not pile up here.
   */
  readonly #withdrawnAt = new Map<string, number>();
  readonly #admittedAt = new WeakMap<object, number>();
  readonly #connections = new Map<
    Connection,
    {
      readonly owner: string;
      readonly label: string;
      /** The terms it was admitted on, and its key's plan's name (a removed plan's keys get the shared one's). */
      readonly plan: PlanTerms | undefined;
      readonly planName: string | undefined;
    }
  >();
  /** The plans of the config a reload replaced this one with (#changedPlan); undefined while it serves. */
  #plansNow: PlanBook | undefined = undefined;
  /** Waiting for the last connection to close (whenIdle). */
  readonly #idle: (() => void)[] = [];
  readonly #metrics: GatewayMetrics | undefined;
  readonly #usage: UsageRecorder | undefined;
  readonly #tracing: Tracing | undefined;
  readonly #held: HeldCalls | undefined;
  readonly #counts: ConnectionCounts;

  constructor(
    config: GatewayConfig,
    stages: Stages,
    logger: Logger,
    boundary: ErrorBoundary,
    counted: {
      /** Where each connection counts its messages; undefined with metrics off. */
      readonly metrics: GatewayMetrics | undefined;
      /** Where keyed messages are counted per day; undefined without an account store. */
      readonly usage: UsageRecorder | undefined;
      /** The traces' exporter and sampler; undefined with tracing off. */
      readonly tracing: Tracing | undefined;
      /** Each caller's held calls, which a bridged connection's long polls take too (limits/held-calls.ts). */
      readonly held?: HeldCalls | undefined;
      /** The open connections per key and per IP, which every served config shares (a fresh count unless given). */
      readonly connections?: ConnectionCounts;
    },
  ) {
    this.#config = config;
    this.#stages = stages;
    this.#logger = logger;
    this.#boundary = boundary;
    this.#metrics = counted.metrics;
    this.#usage = counted.usage;
    this.#tracing = counted.tracing;
    this.#held = counted.held;
    this.#counts = counted.connections ?? new LocalConnectionCounts();
    this.#server = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      // Compression off: a small deflated frame can inflate past any bound on the inflated message.
      perMessageDeflate: false,
      maxPayload: config.limits.ws.maxMessageBytes,
      // a browser carrying its JWT as `bearer.<JWT>` (keys/jwt.ts) is answered `bearer`, never the token;
      // other subprotocols as `ws` answers them by default, the first offered
      handleProtocols: (offered) => {
        if (offered.has(BEARER_PROTOCOL)) return BEARER_PROTOCOL;
        for (const protocol of offered) if (!protocol.startsWith(`${BEARER_PROTOCOL}.`)) return protocol;
        return false;
      },
    });
    // a handshake `ws` refuses itself (a malformed Sec-WebSocket-Protocol) is refused as any other upgrade
    this.#server.on("wsClientError", (error, socket, req) => {
      const abandon = this.#handshakes.get(req);
      if (abandon !== undefined) abandon(invalid(error.message));
      else socket.destroy();
    });
    // the handshake's answer carries the upgrade's request id, as every HTTP answer does
    this.#server.on("headers", (headers, req) => {
      const id = this.#requestIds.get(req);
      if (id !== undefined) headers.push(`${REQUEST_ID_HEADER}: ${id}`);
    });
  }

  /** What gives up each upgrade handed to `ws` and not yet called back: its slot and its node's socket. */
  readonly #handshakes = new WeakMap<IncomingMessage, (refusal?: GatewayError) => void>();

  /** Each upgrade's request id (http/request-id.ts), until its handshake is answered. */
  readonly #requestIds = new WeakMap<IncomingMessage, string>();

  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on("error", destroyOnError);
    const startedAt = performance.now();
    let label: string | undefined;
    let keyId: string | undefined;
    let trace: RequestTrace | undefined;
    const requestId = requestIdFor(req.rawHeaders, req.url ?? "");
    this.#requestIds.set(req, requestId);
    try {
      if (req.headers.upgrade?.toLowerCase() !== "websocket") throw new GatewayError("WEBSOCKET_NOT_OFFERED");
      checkHandshake(req);
      const resolved = this.#stages.resolveEndpoint(req); // 1
      const { endpoint } = resolved;
      label = endpoint.label;
      if (this.#tracing !== undefined)
        trace = this.#tracing.request(label, "ws", requestId, callerTraceParent(req.rawHeaders), startedAt);
      if (!endpoint.websocket) throw new GatewayError("WEBSOCKET_NOT_OFFERED", { label: endpoint.label });
      const admitted = this.#stages.admitCaller(resolved, req, requestId, trace); // 2
      keyId = admitted.principal?.keyId;
      this.#admittedAt.set(admitted, performance.now());
      const mounted = this.#stages.pickWebSocketMount(admitted); // 3
      const group = this.#stages.upstreamGroup(mounted); // 6
      const caps = this.#config.limits.ws;
      // Decided here at once, or with workers by the primary, which counts the whole instance's connections
      // (proxy/cluster-connections.ts): until its answer, nothing of the upgrade is opened.
      this.#counts.reserve(admitted.clientId, admitted.net, caps, (release) => {
        if (release === undefined) {
          const { maxConnectionsPerKey, maxConnectionsPerIp } = caps;
          const refusal = new GatewayError("TOO_MANY_CONNECTIONS", {
            maxConnectionsPerKey,
            maxConnectionsPerIp,
          });
          this.#refuse(socket, refusal, label, requestId, trace, keyId);
          return;
        }
        // the client gave up while the primary answered
        if (!socket.writable) {
          release();
          socket.destroy();
          return;
        }
        try {
          this.#connect(req, socket, head, mounted, group, release, { label, requestId, trace, keyId });
        } catch (error) {
          release();
          this.#refuse(socket, error, label, requestId, trace, keyId);
        }
      });
    } catch (error) {
      this.#refuse(socket, error, label, requestId, trace, keyId);
    }
  };

  /** Opens the node's socket for a counted upgrade, then answers the client's handshake; `release` frees its slot. */
  #connect(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    mounted: Mounted,
    group: UpstreamGroup,
    release: () => void,
    { label, requestId, trace, keyId }: UpgradeContext,
  ): void {
    openNodeSocket(
      group,
      mounted,
      this.#config.limits,
      () => socket.writable,
      (error, upstreamSocket, upstream) => {
        if (error !== undefined || upstreamSocket === undefined || upstream === undefined) {
          release();
          this.#refuse(socket, error, label, requestId, trace, keyId);
          return;
        }
        if (!socket.writable) {
          release();
          upstreamSocket.close();
          return;
        }
        // `ws` may refuse the handshake itself (wsClientError below) or drop a socket that closed meanwhile,
        // and then never calls back: the slot and the node's socket are given up there, or at its close.
        const abandon = (refusal?: GatewayError): void => {
          if (!this.#handshakes.delete(req)) return;
          release();
          upstreamSocket.terminate();
          if (refusal !== undefined) this.#refuse(socket, refusal, label, requestId, trace, keyId);
        };
        this.#handshakes.set(req, abandon);
        // Taken off once `ws` calls back: left on the socket, it held the upgrade's request, its headers and
        // this handler's variables for the connection's life (docs/websocket.md, what an idle connection costs).
        const abandonAtClose = (): void => abandon();
        socket.once("close", abandonAtClose);
        // Called back from the upstream socket's events: what this throws ends this upgrade only.
        try {
          this.#server.handleUpgrade(req, socket, head, (client) => {
            this.#handshakes.delete(req);
            socket.removeListener("close", abandonAtClose);
            try {
              this.#open(client, upstreamSocket, upstream, mounted, release);
              endUpgrade(trace, 101, undefined, upstream.metricName);
            } catch (failure) {
              this.#boundary.caught(failure, "websocket upgrade", { label, upstream: upstream.name });
              release();
              upstreamSocket.terminate();
              client.close(CLOSE.INTERNAL, "internal error");
            }
          });
        } catch (failure) {
          this.#handshakes.delete(req);
          release();
          upstreamSocket.terminate();
          this.#refuse(socket, failure, label, requestId, trace, keyId);
        }
      },
      nodeHandshakeHeaders(mounted.admitted),
      this.#held,
    );
  }

  /**
   * A node of `group` changed state: the connections on any of its nodes that another would serve better
   * (group.ts `betterThan`: one out of rotation while another is in, lagging or cordoned, whenever it left;
   * a fallback once a primary is back) move, once no write of theirs waits for its answer (connection.ts
   * `nodeLeftRotation`).
   */
  rebalance(group: UpstreamGroup): void {
    const worse = group.members.filter((member) => group.betterThan(member));
    if (worse.length === 0) return;
    for (const connection of [...this.#connections.keys()])
      if (worse.includes(connection.node)) connection.nodeLeftRotation();
  }

  /** Resolves once no connection is open: at once when none is. */
  whenIdle(): Promise<void> {
    if (this.#connections.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Closes every connection, both sides, with 1001. */
  close(): void {
    for (const connection of this.#connections.keys())
      connection.close(CLOSE.GOING_AWAY, "server shutting down");
  }

  /** Closes a key's connections when it is revoked, its account stops being active, or its settings change. */
  closeKey(keyId: string): void {
    // an upgrade admitted before now and still opening its node socket opens under the old grant: it is
    // closed as it opens
    const now = performance.now();
    this.#withdrawnAt.delete(keyId);
    this.#withdrawnAt.set(keyId, now);
    // the oldest first: past the node socket's handshake timeout (and a minute's slack for the slot's
    // reservation) no upgrade admitted before them is still opening; and never more than WITHDRAWALS_KEPT
    // (a mass revocation's upgrades still opening past them open, as before the record)
    const kept = now - this.#config.limits.ws.handshakeTimeoutMs - 60_000;
    for (const [key, at] of this.#withdrawnAt) {
      if (at >= kept && this.#withdrawnAt.size <= WITHDRAWALS_KEPT) break;
      this.#withdrawnAt.delete(key);
    }
    for (const [connection, { owner }] of this.#connections)
      if (owner === keyId) connection.close(CLOSE.POLICY, "API key withdrawn or its settings changed");
  }

  /**
   * A reload changed plans: a connection admitted on terms its plan no longer has (a quota, a rate, a
   * method taken away; the plan removed, so the shared plan's terms) is closed as a key whose settings
   * changed is. Its messages are checked against the terms it opened with, which a reload does not reach:
   * it connects again on the new ones. Connections on unchanged plans stay.
   */
  closeWherePlanChanged(plans: PlanBook): void {
    // an upgrade in flight now is admitted on this config's plans, and judged as it opens (#open)
    this.#plansNow = plans;
    for (const [connection, { plan, planName }] of this.#connections)
      if (changedPlan(plan, planName, plans)) connection.close(CLOSE.POLICY, PLAN_CHANGED);
  }

  /** Open connections per label, for the metrics. */
  connections(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { label } of this.#connections.values()) counts.set(label, (counts.get(label) ?? 0) + 1);
    return counts;
  }

  /** Open subscriptions per label, for the metrics. */
  subscriptions(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const [connection, { label }] of this.#connections)
      counts.set(label, (counts.get(label) ?? 0) + connection.subscriptionCount);
    return counts;
  }

  /**
   * Moves the connections off an upstream that is failing: a node that hangs keeps its sockets open
   * without answering, so the prober's verdict, not the socket, says it is gone. Each connection opens a
   * socket on a node in rotation and takes its subscriptions along (connection.ts).
   */
  upstreamFailed(upstream: Upstream): void {
    for (const connection of [...this.#connections.keys()])
      if (connection.node === upstream) connection.nodeFailed();
  }

  /** A connection's way to a node of its label at the head, where its dialect knows reads at the head and the label has several nodes. */
  #headAsk(mounted: Mounted, group: UpstreamGroup): HeadAsk | undefined {
    const bridged = this.#bridged(mounted);
    if (bridged === undefined || group.members.length < 2) return undefined;
    return headAsk({ ...bridged, group, label: mounted.admitted.endpoint.label });
  }

  /** A connection's way to its label's archive nodes, where its key may reach them and its dialect has old reads. */
  #archiveAsk(mounted: Mounted): ArchiveAsk | undefined {
    const bridged = this.#bridged(mounted);
    const archive = this.#stages.archiveGroup(mounted);
    if (
      archive === undefined ||
      bridged === undefined ||
      mounted.mount.policy.jsonrpc?.reads?.archive === undefined
    )
      return undefined;
    return archiveAsk({ ...archive, ...bridged });
  }

  /** What a call a connection asks over HTTP, beside its node, takes of its mount (http-bridge.ts). */
  #bridged(mounted: Mounted): BridgedMount | undefined {
    const jsonrpc = mounted.mount.policy.jsonrpc;
    if (jsonrpc?.reads === undefined) return undefined;
    return {
      path: mounted.mount.path,
      writes: jsonrpc.writes,
      errorForm: errorFormOf(jsonrpc, false),
      nodeErrors: mounted.mount.policy.nodeErrors,
      limits: this.#config.limits,
      headers: nodeHandshakeHeaders(mounted.admitted),
      requestId: mounted.admitted.requestId,
    };
  }

  #open(
    client: WebSocket,
    upstreamSocket: NodeSocket,
    upstream: Upstream,
    mounted: Mounted,
    release: () => void,
  ): void {
    const { admitted } = mounted;
    const group = this.#stages.upstreamGroup(mounted);
    const connection = new Connection(client, upstreamSocket, upstream, {
      stages: this.#stages,
      boundary: this.#boundary,
      mounted,
      support: this.#config.support,
      limits: this.#config.limits,
      metrics: this.#metrics,
      usage: this.#usage,
      trace: typeof admitted.trace === "object" ? admitted.trace : undefined,
      cache: cachedCallsOf(group, mounted),
      reconnect: (wanted, callback, besides) =>
        openNodeSocket(
          group,
          mounted,
          this.#config.limits,
          wanted,
          callback,
          nodeHandshakeHeaders(admitted),
          this.#held,
          besides,
        ),
      // as over HTTP: a caller reads its own write, not an answer the cache kept from before it, and its
      // next HTTP reads go first to the node whose mempool has it (this connection's are on that node)
      onWrite: (node) => {
        group.wrote(admitted);
        group.writers.took(admitted.clientId, node);
      },
      // with the filter's range, which its logs' scan is checked against as the chain moves on
      onHandleMade: (node, name, call) =>
        group.states.made(
          admitted.clientId,
          name,
          node,
          filterSpan(
            readNeed(mounted.mount.policy.jsonrpc?.reads, mounted.mount.head, [call], true)?.ranges[0],
          ),
        ),
      betterThan: (node) => group.betterThan(node),
      caughtUp: (node, callback) => group.whenCaughtUp(node, callback),
      archiveAsk: this.#archiveAsk(mounted),
      headAsk: this.#headAsk(mounted, group),
      servedHead: () => group.served.height,
      moreFinalThan: (node) => group.moreFinalThan(node),
      learnHeights: (node, calls, single, text) =>
        learnSocketHeights(
          group,
          mounted.mount.policy.jsonrpc?.reads,
          mounted.mount.head,
          calls,
          single,
          node,
          text,
        ),
      // as a block read's answer: a block the node has (a finalized header's too), its head at least there
      learnHead: (node, height, finalized) => {
        if (!readsHeights(group)) return;
        const read = height();
        if (read === undefined) return;
        group.answeredHeight(node, read, false);
        if (finalized) group.finalAnswered(node, read);
      },
      headChanged: (_node, result) => group.headChanged(result),
      logger: this.#logger,
      onClose: () => {
        this.#connections.delete(connection);
        release();
        if (this.#connections.size === 0) for (const resolve of this.#idle.splice(0)) resolve();
      },
    });
    const planName = admitted.principal?.plan;
    this.#connections.set(connection, {
      owner: admitted.clientId,
      label: admitted.endpoint.label,
      plan: admitted.plan,
      planName,
    });
    this.#metrics?.webSocketOpened(admitted.endpoint.label);
    this.#logger.log("info", "websocket open", {
      requestId: admitted.requestId,
      label: admitted.endpoint.label,
      key: admitted.principal?.keyId,
    });
    // admitted while a reload changed its plan: it opened after that reload's look at the connections
    if (this.#plansNow !== undefined && changedPlan(admitted.plan, planName, this.#plansNow))
      connection.close(CLOSE.POLICY, PLAN_CHANGED);
    // admitted before its key was withdrawn or its settings changed: it opened after closeKey looked
    else if ((this.#withdrawnAt.get(admitted.clientId) ?? -1) > (this.#admittedAt.get(admitted) ?? 0))
      connection.close(CLOSE.POLICY, "API key withdrawn or its settings changed");
  }

  #refuse(
    socket: Duplex,
    error: unknown,
    label: string | undefined,
    requestId: string,
    trace: RequestTrace | undefined,
    keyId?: string,
  ): void {
    const refusal = this.#boundary.caught(error, "websocket upgrade", { label });
    endUpgrade(trace, refusal.status, refusal.code, undefined);
    // counted and logged as an HTTP request's refusal is: a failure always, a refusal with the access log
    this.#metrics?.upgradeRefused(label ?? "none", refusal.code, refusal.status);
    const result = resultOf(refusal.code, refusal.status);
    const failed = result === "upstream" || result === "gateway";
    if (failed || this.#config.log.access)
      this.#logger.log(failed ? "warn" : "info", "websocket refused", {
        requestId,
        label,
        key: keyId ?? refusal.keyId,
        error: refusal.code,
        status: refusal.status,
      });
    // a keyed upgrade refused (its settings, its network, its connections, no node) is one of its key's
    // errors, as an HTTP call's refusal is: a customer whose app cannot connect sees why in its usage
    const key = keyId ?? refusal.keyId;
    if (this.#usage !== undefined && key !== undefined && label !== undefined)
      this.#usage.record(key, label, 1, 1, 0, { method: "websocket", code: refusal.code, ms: undefined });
    if (socket.writable) socket.end(upgradeRefusal(refusal, requestId));
    socket.destroy();
  }
}

/**
 * The node side of a connection: a socket on the node, or where the node software has no WebSocket
 * server (registry `webSocketOverHttp`), a bridge that sends each message to it over HTTP.
 */
function openNodeSocket(
  group: UpstreamGroup,
  mounted: Mounted,
  limits: Limits,
  wanted: () => boolean,
  callback: (error: GatewayError | undefined, socket?: NodeSocket, upstream?: Upstream) => void,
  headers: Readonly<Record<string, string>>,
  held: HeldCalls | undefined,
  besides?: Upstream,
): void {
  const jsonrpc = mounted.mount.policy.jsonrpc;
  const longPolls = mounted.mount.policy.longPolls;
  if (jsonrpc?.webSocketOverHttp === true)
    openHttpBridge(
      group,
      limits,
      {
        path: mounted.mount.path,
        writes: jsonrpc.writes,
        errorForm: errorFormOf(jsonrpc, false),
        nodeErrors: mounted.mount.policy.nodeErrors,
        longPolls:
          longPolls?.methods === undefined
            ? undefined
            : {
                methods: longPolls.methods,
                heldMs: longPolls.heldMs,
                slots: held === undefined ? undefined : { calls: held, caller: mounted.admitted.clientId },
              },
      },
      wanted,
      callback,
      headers,
      besides,
    );
  else openWebSocket(group, limits, wanted, callback, headers, besides);
}

/** The label's answer cache for a connection's single calls, when the label has one and its reads have rules. */
function cachedCallsOf(group: UpstreamGroup, mounted: Mounted): CachedCalls | undefined {
  const reads = mounted.mount.policy.jsonrpc?.reads;
  if (group.cache === undefined || reads?.cache === undefined) return undefined;
  return new CachedCalls(group, reads, mounted.mount.head, mounted.admitted);
}

/** The node's handshake carries the upgrade's id and trace, as an HTTP request's node request does. */
function nodeHandshakeHeaders(admitted: Admitted): Readonly<Record<string, string>> {
  const { trace } = admitted;
  const headers: Record<string, string> = {};
  const flat = admitted.nodeHeaders([]);
  for (let i = 0; i < flat.length; i += 2) headers[flat[i] as string] = flat[i + 1] as string;
  if (typeof trace === "object") headers[TRACE_PARENT_HEADER] = trace.traceParent();
  return headers;
}

/** The upgrade's span ends when the client's handshake is answered: 101 with its node, or the refusal. */
function endUpgrade(
  trace: RequestTrace | undefined,
  status: number,
  code: ErrorCode | undefined,
  upstream: string | undefined,
): void {
  trace?.end({
    family: "jsonrpc",
    method: "websocket",
    methodClass: "stream",
    result: resultOf(code, status === 101 ? 200 : status),
    code,
    status,
    upstream,
    cache: undefined,
    tier: undefined,
    computeUnits: 0,
  });
}

/**
 * An upgrading socket's error ends it. A function of its own rather than a closure in handleUpgrade: the
 * socket keeps its listener for the connection's life, and a closure there kept the upgrade request, its
 * headers and the rest of handleUpgrade's variables alive with it.
 */
function destroyOnError(this: Duplex): void {
  this.destroy();
}

const PLAN_CHANGED = "the API key's plan changed: connect again";

/**
 * Whether the terms a connection was admitted on differ from what its key's plan (`planName`) has now:
 * in what its messages are held to. A plan's keys and ordering (`maxKeys`, `orderable`) are the control
 * plane's, and a change of them closes no connection.
 */
function changedPlan(plan: PlanTerms | undefined, planName: string | undefined, plans: PlanBook): boolean {
  return plan !== undefined && planName !== undefined && termsText(plan) !== termsText(plans.terms(planName));
}

/** The terms a connection's messages are held to, as one text with its members in a fixed order. */
function termsText(terms: PlanTerms): string {
  return JSON.stringify([
    terms.name,
    terms.computeUnitRate.perSecond,
    terms.computeUnitRate.burst,
    terms.dailyQuota,
    terms.monthlyQuota,
    terms.quotaPer,
    terms.dedicatedMethods,
    [...terms.disabledMethods].sort(),
    terms.archive,
    terms.cachedShare,
  ]);
}

/** What an upgrade's refusal is logged, counted and traced with. */
interface UpgradeContext {
  readonly label: string | undefined;
  readonly requestId: string;
  readonly trace: RequestTrace | undefined;
  readonly keyId: string | undefined;
}
