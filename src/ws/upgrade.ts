import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import type { GatewayConfig } from "../config/types.js";
import { GatewayError } from "../errors/table.js";
import { REQUEST_ID_HEADER, requestIdFor } from "../http/request-id.js";
import { BEARER_PROTOCOL } from "../keys/jwt.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { HeldCalls } from "../limits/held-calls.js";
import type { Logger } from "../log.js";
import type { GatewayMetrics, WebSocketCounts } from "../metrics/gateway-metrics.js";
import type { ErrorBoundary } from "../pipeline/boundary.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import type { PlanBook, PlanTerms } from "../plans/plan-terms.js";
import { callerTraceParent } from "../tracing/trace-parent.js";
import type { RequestTrace, Tracing } from "../tracing/tracing.js";
import type { UpstreamGroup } from "../upstream/group.js";
import type { Upstream } from "../upstream/upstreams.js";
import { CLOSE } from "./close-codes.js";
import { Connection } from "./connection.js";
import { type ConnectionCounts, LocalConnectionCounts } from "./connection-counts.js";
import { ConnectionSetup } from "./connection-setup.js";
import { checkHandshake, invalid } from "./handshake.js";
import type { NodeSocket } from "./node-socket.js";
import { nodeHandshakeHeaders, openNodeSocket } from "./open-node-socket.js";
import { changedPlan, PLAN_CHANGED } from "./plan-change.js";
import { destroyOnError, endUpgrade, type UpgradeContext, UpgradeRefusals } from "./upgrade-refusal.js";

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
  /**
   * The plans of the config a reload replaced this one with (plan-change.ts `changedPlan`); undefined while it
   * serves.
   */
  #plansNow: PlanBook | undefined = undefined;
  /** Waiting for the last connection to close (whenIdle). */
  readonly #idle: (() => void)[] = [];
  readonly #metrics: GatewayMetrics | undefined;
  readonly #tracing: Tracing | undefined;
  readonly #held: HeldCalls | undefined;
  readonly #counts: ConnectionCounts;
  readonly #refusals: UpgradeRefusals;
  readonly #setup: ConnectionSetup;

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
    this.#tracing = counted.tracing;
    this.#held = counted.held;
    this.#counts = counted.connections ?? new LocalConnectionCounts();
    this.#refusals = new UpgradeRefusals(config, logger, boundary, counted.metrics, counted.usage);
    this.#setup = new ConnectionSetup(config, stages, logger, boundary, counted);
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
      const context = { label, requestId, trace, keyId };
      // a key whose rate or quota no call would pass now is refused here, as its HTTP call would be (5)
      const spendable = this.#stages.checkSpendable(mounted);
      if (spendable === undefined) this.#reserve(req, socket, head, mounted, group, context);
      else
        spendable.then(
          () => this.#reserve(req, socket, head, mounted, group, context),
          (error: unknown) => this.#refusals.refuse(socket, error, label, requestId, trace, keyId),
        );
    } catch (error) {
      this.#refusals.refuse(socket, error, label, requestId, trace, keyId);
    }
  };

  /** Takes the upgrade's connection slot, then opens it (#connect); TOO_MANY_CONNECTIONS without one. */
  #reserve(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    mounted: Mounted,
    group: UpstreamGroup,
    context: UpgradeContext,
  ): void {
    const { label, requestId, trace, keyId } = context;
    const { admitted } = mounted;
    const caps = this.#config.limits.ws;
    try {
      // Decided here at once, or with workers by the primary, which counts the whole instance's connections
      // (proxy/cluster-connections.ts): until its answer, nothing of the upgrade is opened.
      this.#counts.reserve(admitted.clientId, admitted.net, caps, (release) => {
        if (release === undefined) {
          const { maxConnectionsPerKey, maxConnectionsPerIp } = caps;
          const refusal = new GatewayError("TOO_MANY_CONNECTIONS", {
            maxConnectionsPerKey,
            maxConnectionsPerIp,
          });
          this.#refusals.refuse(socket, refusal, label, requestId, trace, keyId);
          return;
        }
        // the client gave up while the primary answered
        if (!socket.writable) {
          release();
          socket.destroy();
          return;
        }
        try {
          this.#connect(req, socket, head, mounted, group, release, context);
        } catch (error) {
          release();
          this.#refusals.refuse(socket, error, label, requestId, trace, keyId);
        }
      });
    } catch (error) {
      this.#refusals.refuse(socket, error, label, requestId, trace, keyId);
    }
  }

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
          this.#refusals.refuse(socket, error, label, requestId, trace, keyId);
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
          if (refusal !== undefined) this.#refusals.refuse(socket, refusal, label, requestId, trace, keyId);
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
          this.#refusals.refuse(socket, failure, label, requestId, trace, keyId);
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

  #open(
    client: WebSocket,
    upstreamSocket: NodeSocket,
    upstream: Upstream,
    mounted: Mounted,
    release: () => void,
  ): void {
    const { admitted } = mounted;
    const connection = new Connection(
      client,
      upstreamSocket,
      upstream,
      this.#setup.optionsFor(mounted, () => {
        this.#connections.delete(connection);
        release();
        if (this.#connections.size === 0) for (const resolve of this.#idle.splice(0)) resolve();
      }),
    );
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
}
