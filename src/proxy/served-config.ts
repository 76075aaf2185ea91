import type { SharedAnswers } from "../cache/shared-answers.js";
import type { GatewayConfig } from "../config/types.js";
import type { KeyStore } from "../keys/types.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { HeldCalls } from "../limits/held-calls.js";
import type { RateLimiter } from "../limits/token-bucket.js";
import type { Logger } from "../log.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import { ErrorBoundary } from "../pipeline/boundary.js";
import type { HttpContext } from "../pipeline/http.js";
import { Stages } from "../pipeline/stages.js";
import type { QuotaLedger } from "../plans/quota-ledger.js";
import type { Endpoint } from "../registry/types.js";
import type { Tracing } from "../tracing/tracing.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { Prober } from "../upstream/prober.js";
import { type DispatcherFactory, type Upstream, UpstreamTable } from "../upstream/upstreams.js";
import type { ConnectionCounts } from "../ws/connection-counts.js";
import { WebSocketGateway } from "../ws/upgrade.js";
import type { GroupShare } from "./cluster-shares.js";

/**
 * One deployment config as the proxy serves it: its upstreams and their prober, the pipeline's stages, the
 * WebSocket gateway and the context every HTTP exchange shares. The server (server.ts) serves new requests
 * with its current served config; a reload builds a new one, and the old one serves what it already took
 * until it is done.
 */
export interface ServedConfig {
  readonly config: GatewayConfig;
  readonly upstreams: UpstreamTable;
  readonly stages: Stages;
  readonly websockets: WebSocketGateway;
  readonly http: HttpContext;
  /** No longer the config new requests meet: its nodes' changes of state are no longer logged. */
  retire(): void;
  /** Stops probing; what is in flight goes on. */
  stop(): void;
}

export interface ServedConfigParts {
  readonly config: GatewayConfig;
  readonly keys: KeyStore;
  readonly endpoints: ReadonlyMap<string, Endpoint>;
  readonly dispatcherFactory: DispatcherFactory;
  readonly limiter: RateLimiter;
  readonly quotas: QuotaLedger;
  /** Each caller's held calls, over HTTP and over a WebSocket bridged over HTTP alike: one for every config. */
  readonly held: HeldCalls;
  /** The open WebSocket connections per key and per IP: one for every config, too. */
  readonly connections: ConnectionCounts;
  readonly usage: UsageRecorder | undefined;
  readonly heads: GroupShare | undefined;
  readonly handles: GroupShare | undefined;
  readonly sharedAnswers: SharedAnswers | undefined;
  readonly metrics: GatewayMetrics | undefined;
  readonly tracing: Tracing | undefined;
  readonly logger: Logger;
}

export function buildServedConfig(parts: ServedConfigParts): ServedConfig {
  const { config, logger, metrics } = parts;
  const upstreams = new UpstreamTable(
    config,
    parts.endpoints,
    parts.dispatcherFactory,
    (group, upstream, from, to, reason) => {
      // Leaving rotation is what an operator must see; coming back is news. A retired config's prober
      // runs on for its WebSockets (proxy/server.ts), and the current config's logs the same change.
      if (!retired)
        logger.log(to === "healthy" ? "info" : "warn", "upstream state", {
          label: group.label,
          mount: group.mount,
          upstream: upstream.name,
          from,
          to,
          reason,
        });
      if (to === "failing" || to === "wrong-chain") websockets.upstreamFailed(upstream);
      // connections on a node that answers but is out of rotation (behind the others, cordoned by an
      // operator) go to one in rotation, where there is one: at every change, so that one that left while
      // none other was in moves when one comes back
      websockets.rebalance(group);
    },
  );
  const prober = new Prober(upstreams, parts.endpoints, config.health, logger);
  const boundary = new ErrorBoundary(logger);
  const stages = new Stages({
    config,
    endpoints: parts.endpoints,
    keys: parts.keys,
    upstreams,
    limiter: parts.limiter,
    quotas: parts.quotas,
  });
  const { held } = parts;
  const websockets: WebSocketGateway = new WebSocketGateway(config, stages, logger, boundary, {
    metrics,
    usage: parts.usage,
    tracing: parts.tracing,
    held,
    connections: parts.connections,
  });
  const http: HttpContext = {
    limits: config.limits,
    logger,
    logAccess: config.log.access,
    metrics,
    usage: parts.usage,
    inFlight: { count: 0 },
    held,
    boundary,
    tracing: parts.tracing,
  };
  prober.start();
  parts.heads?.attach(upstreams.groups());
  parts.handles?.attach(upstreams.groups());
  for (const group of upstreams.groups())
    if (group.cache !== undefined) group.cache.shared = parts.sharedAnswers;
  let retired = false;
  const retire = () => {
    retired = true;
    prober.quiet();
  };
  const stop = () => {
    prober.stop();
    parts.heads?.detach(upstreams.groups());
    parts.handles?.detach(upstreams.groups());
  };
  return { config, upstreams, stages, websockets, http, retire, stop };
}

/**
 * The heads each label served, carried over to a new config's groups: a reload never takes one back. So
 * are its finalized height and final answers (and, whatever the nodes, its answer and cache counts). Each
 * only where it is still the chain's: a label whose nodes
 * are not asked which chain they are on (registry `noChainId`, or probes off) and that the reload moved to
 * other nodes may now be served by another chain's, whose heights and answers the old ones are not (a
 * carried finalized height would keep the new chain's blocks under it as final, a head make reads wait).
 */
export function carryServedHeads(from: UpstreamTable, to: UpstreamTable): void {
  for (const group of from.groups()) {
    const next = to.group(group.label, group.mount);
    if (next === undefined) continue;
    next.answers.carryFrom(group.answers);
    // the counts the metrics read go on whatever the nodes: a counter never goes back
    const still = next.chainChecked || sameNodes(group, next);
    if (next.cache !== undefined && group.cache !== undefined) next.cache.carryFrom(group.cache, still);
    if (!still) continue;
    next.served.raiseFromPeer(group.served.height, false);
    next.finality.finalizedSeen(group.finalized);
  }
}

/** Whether two groups have the same nodes, by URL (credentials, names and weights aside). */
function sameNodes(a: UpstreamGroup, b: UpstreamGroup): boolean {
  const nodes = (group: UpstreamGroup) =>
    new Set(group.members.map((m) => `${m.origin}${m.basePath}?${m.baseQuery}`));
  const before = nodes(a);
  const after = nodes(b);
  return before.size === after.size && [...before].every((node) => after.has(node));
}

/**
 * The upstreams of a config a reload replaced that the new config no longer has (removed, or renamed: by
 * label, mount and name) are cordoned there: the WebSocket connections still on them move to that config's
 * other nodes, as an operator who takes a node out of the deployment means them to. A group the new config
 * names none of keeps the nodes it has left: its calls in flight (one waiting for a first probe, or for a
 * head) and its connections have no other node to go to, and finish on it as without the reload.
 */
export function cordonRemoved(retired: UpstreamTable, current: UpstreamTable): void {
  for (const group of retired.groups()) {
    const next = current.group(group.label, group.mount);
    const named = (member: Upstream) => next?.members.some((m) => m.name === member.name) === true;
    const anyDeployed = group.members.some(named);
    // deployed again (a reload back to its name): what the removal did is undone first, so that no call
    // waiting on the group finds every node out for the moment between the two
    for (const member of group.members)
      if (named(member) && REMOVED.delete(member)) member.health.cordon(false);
    for (const member of group.members)
      if (!named(member) && anyDeployed && !REMOVED.has(member)) {
        REMOVED.add(member);
        member.health.cordon(true);
      }
  }
}

/** Upstreams of retired configs cordoned because a reload took them out of the deployment (cordonRemoved). */
const REMOVED = new WeakSet<Upstream>();

/** Whether an operator's uncordon may reach `member`: not while the deployment has taken it out. */
export function operatorMayUncordon(member: Upstream): boolean {
  return !REMOVED.has(member);
}

/**
 * An operator's cordons, and the counts the metrics read, carried over to a new config's upstreams of the
 * same label, mount and name: a reload neither undoes a cordon nor sends a counter back. The counts are
 * the same object, not a copy: an attempt still out on the old config when it ends counts where the
 * metrics read (a copy taken at the reload lost it).
 */
export function carryUpstreamState(from: UpstreamTable, to: UpstreamTable): void {
  for (const group of from.groups()) {
    const next = to.group(group.label, group.mount);
    for (const member of group.members) {
      const same = next?.members.find((m) => m.name === member.name);
      if (same === undefined) continue;
      same.counts = member.counts;
      if (member.health.state === "cordoned") same.health.keepCordon();
    }
  }
}
