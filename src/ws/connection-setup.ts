import { learnSocketHeights, readsHeights } from "../answers/examined.js";
import { filterSpan } from "../answers/range-plan.js";
import { readNeed } from "../answers/read-need.js";
import type { GatewayConfig } from "../config/types.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { HeldCalls } from "../limits/held-calls.js";
import type { Logger } from "../log.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { ErrorBoundary } from "../pipeline/boundary.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { archiveAskOf, headAskOf } from "./bridged-mount.js";
import { CachedCalls } from "./cached-calls.js";
import type { ConnectionOptions } from "./connection-options.js";
import { nodeHandshakeHeaders, openNodeSocket } from "./open-node-socket.js";

/**
 * What each connection is given as it opens (connection-options.ts): the gateway's stages, bounds and
 * counters, and its label's group's hooks, to move it to another node, to learn from its node's answers
 * and to ask the head's and the archive's nodes. Made once per served config, with the gateway
 * (upgrade.ts).
 */
export class ConnectionSetup {
  readonly #config: GatewayConfig;
  readonly #stages: Stages;
  readonly #logger: Logger;
  readonly #boundary: ErrorBoundary;
  readonly #metrics: GatewayMetrics | undefined;
  readonly #usage: UsageRecorder | undefined;
  readonly #held: HeldCalls | undefined;

  constructor(
    config: GatewayConfig,
    stages: Stages,
    logger: Logger,
    boundary: ErrorBoundary,
    counted: {
      readonly metrics: GatewayMetrics | undefined;
      readonly usage: UsageRecorder | undefined;
      readonly held?: HeldCalls | undefined;
    },
  ) {
    this.#config = config;
    this.#stages = stages;
    this.#logger = logger;
    this.#boundary = boundary;
    this.#metrics = counted.metrics;
    this.#usage = counted.usage;
    this.#held = counted.held;
  }

  /** The options of the connection `mounted` opens; `onClose` is told once it closes. */
  optionsFor(mounted: Mounted, onClose: () => void): ConnectionOptions {
    const { admitted } = mounted;
    const group = this.#stages.upstreamGroup(mounted);
    return {
      stages: this.#stages,
      boundary: this.#boundary,
      mounted,
      support: this.#config.support,
      limits: this.#config.limits,
      blockRanges: this.#config.blockRanges[group.label],
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
          admitted.stateOwner,
          name,
          node,
          filterSpan(
            readNeed(mounted.mount.policy.jsonrpc?.reads, mounted.mount.head, [call], true)?.ranges[0],
          ),
        ),
      betterThan: (node) => group.betterThan(node),
      caughtUp: (node, callback) => group.whenCaughtUp(node, callback),
      archiveAsk: archiveAskOf(mounted, this.#stages, this.#config.limits),
      headAsk: headAskOf(mounted, group, this.#config.limits),
      servedHead: () => group.served.height,
      moreFinalThan: (node) => group.finality.moreFinalThan(node),
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
      learnHead: (node, shown, finalized) => {
        if (!readsHeights(group)) return;
        const block = shown();
        if (block === undefined) return;
        // an event the node took back (a reorganisation): no block it has, and what was read at the head
        // may be of the block it is gone with
        if (block.removed === true) return group.finality.blockRemoved(block.height, block.hash);
        group.answeredHeight(node, block.height, false);
        if (finalized) group.finality.finalAnswered(node, block.height);
        // a header with its hash: one that replaced a block of its height, pushed at once (a one-block
        // reorg), ends what was read at the head before the client has it, as the prober's read would
        else if (block.hash !== undefined && block.parent !== undefined)
          group.finality.blockSeen(node, block.height, block.hash, block.parent);
      },
      headChanged: (_node, result) => group.headChanged(result),
      logger: this.#logger,
      onClose,
    };
  }
}

/** The label's answer cache for a connection's single calls, when the label has one and its reads have rules. */
function cachedCallsOf(group: UpstreamGroup, mounted: Mounted): CachedCalls | undefined {
  const reads = mounted.mount.policy.jsonrpc?.reads;
  if (group.cache === undefined || reads?.cache === undefined) return undefined;
  return new CachedCalls(group, reads, mounted.mount.head, mounted.admitted);
}
