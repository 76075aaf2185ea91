import type { BlockRangeLimits, GatewayConfig, Limits } from "../config/types.js";
import type { PassedCall } from "../jsonrpc/check.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { Logger } from "../log.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { ErrorBoundary } from "../pipeline/boundary.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import type { RequestTrace } from "../tracing/tracing.js";
import type { Upstream } from "../upstream/upstreams.js";
import type { ArchiveAsk } from "./archive-reads.js";
import type { CachedCalls } from "./cached-calls.js";
import type { HeadAsk } from "./head-reads.js";
import type { Reconnect } from "./move.js";
import type { ShownBlock } from "./subscriptions.js";

/**
 * What a client connection (connection.ts) is given by its upgrade (connection-setup.ts): the pipeline's
 * stages and its mount, its bounds, and the label's ways to learn from its answers and to ask other nodes.
 */
export interface ConnectionOptions {
  readonly stages: Stages;
  /** Where an unexpected error becomes a logged INTERNAL answer (pipeline/boundary.ts). */
  readonly boundary: ErrorBoundary;
  /** The connection's stage 3 value, from its upgrade. */
  readonly mounted: Mounted;
  readonly support: GatewayConfig["support"];
  readonly limits: Limits;
  /** The label's own range limits over the registry's (config `blockRanges`), for a move's range queries. */
  readonly blockRanges?: Readonly<Record<string, BlockRangeLimits>> | undefined;
  readonly metrics: GatewayMetrics | undefined;
  readonly usage: UsageRecorder | undefined;
  /** The upgrade's trace, when it was sampled: every message of the connection is traced under it. */
  readonly trace: RequestTrace | undefined;
  /** The label's answer cache, for single calls (cached-calls.ts); undefined when the label has none. */
  readonly cache: CachedCalls | undefined;
  readonly reconnect: Reconnect;
  /**
   * A write the connection sent was answered by `node`: its label's answers read at the head end
   * (src/cache/), and its caller's next HTTP reads go first to that node (the connection's are on it).
   */
  readonly onWrite: (node: Upstream) => void;
  /**
   * A call made a filter on `node`, named `name`: it is the caller's, polled over HTTP on that node too, and
   * no other caller's to use (node-states.ts `made`).
   */
  readonly onHandleMade: (node: Upstream, name: string, call: PassedCall) => void;
  /** Where a message the gateway failed after it went is logged (a write a move refused). */
  readonly logger: Logger;
  /** Whether another of the label's nodes would serve a connection better than `node` (group.ts `betterThan`). */
  readonly betterThan: (node: Upstream) => boolean;
  /** Calls back once `node` has reached the head the label served, or after about one block (group.ts `whenCaughtUp`). */
  readonly caughtUp: (node: Upstream, callback: () => void) => void;
  /** For a key that may reach archive nodes: asks them a read its node answered "no such state". */
  readonly archiveAsk?: ArchiveAsk | undefined;
  /** Asks a node at the head a read its own node has not reached (head-reads.ts). */
  readonly headAsk?: HeadAsk | undefined;
  /** The highest head the label has served (answers/served-head.ts). */
  readonly servedHead?: (() => number) | undefined;
  /**
   * The node of the label at its head that named a higher finalized block than `node` did, if one did
   * (label-finality.ts `mostFinalized`): a read at the finalized tag goes there.
   */
  readonly moreFinalThan?: ((node: Upstream) => Upstream | undefined) | undefined;
  /**
   * `node` answered `calls` (`single`: one call, not a batch) with `text`: the label learns the heights it
   * shows (answers/examined.ts learnSocketHeights).
   */
  readonly learnHeights?: (
    node: Upstream,
    calls: readonly PassedCall[],
    single: boolean,
    text: string,
  ) => void;
  /**
   * `node` pushed a header to a heads subscription (registry `heads`, with its hash where `heads.hash` names it), or an event of a block (`events`):
   * the label learns its height, read by
   * `height` only when the label reads heights at all (answers/examined.ts readsHeights); `finalized`: the
   * node holds that block final (registry `heads.finalized`).
   */
  readonly learnHead?: (node: Upstream, block: () => ShownBlock | undefined, finalized: boolean) => void;
  /** A node pushed what its head is now with no height (registry `headChanges`): `result`, its text. */
  readonly headChanged?: (node: Upstream, result: string) => void;
  readonly onClose: () => void;
}
