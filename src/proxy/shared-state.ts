import cluster from "node:cluster";
import type { SharedAnswers } from "../cache/shared-answers.js";
import type { GatewayConfig } from "../config/types.js";
import type { SharedTokenBuckets } from "../limits/shared-buckets.js";
import type { Logger } from "../log.js";
import {
  LocalQuotaLedger,
  type QuotaCrossing,
  type QuotaLedger,
  type QuotaSpentSource,
} from "../plans/quota-ledger.js";
import type { SharedQuotaLedger } from "../plans/shared-quotas.js";
import { StoreStartedLedger } from "../plans/store-started.js";
import { type GroupShare, WorkerHandles, WorkerHeads } from "./cluster-shares.js";

/**
 * What a proxy's instances share through Redis when `sharedLimits` names one: call rates, quotas, the
 * labels' served heads and final answers (docs/deployment.md). Without it, quotas are counted in this
 * process, a cluster's workers share heads and filters through their primary (cluster-shares.ts), and
 * the rest is this process's own.
 */
export interface SharedState {
  readonly limiter: SharedTokenBuckets | undefined;
  readonly quotas: QuotaLedger;
  /** `quotas` when Redis holds them, for the dependency gauge. */
  readonly sharedQuotas: SharedQuotaLedger | undefined;
  /** The labels' served heads, as every instance or worker served them. */
  readonly heads: GroupShare | undefined;
  /** The nodes of the filters callers made through any instance or worker. */
  readonly handles: GroupShare | undefined;
  readonly answers: SharedAnswers | undefined;
  close(): Promise<void>;
}

/**
 * Opens the shared state, waiting for Redis at most `readyMs`: until it answers, limits are local. The
 * Redis client's modules are loaded only when `sharedLimits` is set, so a proxy without it does not hold
 * ioredis's code (docs/performance.md, "What a proxy holds at rest").
 */
export async function openSharedState(
  config: GatewayConfig,
  logger: Logger,
  crossed: (crossing: QuotaCrossing) => void,
  readyMs: number,
  spent?: QuotaSpentSource,
): Promise<SharedState> {
  const redis = config.sharedLimits;
  if (redis === undefined) {
    // a scope's first call of its month here (after a restart, or a reload that moved a plan's keys to
    // another scope) starts from the account store's usage counts, as a shared one does (docs/plans.md)
    const quotas = new StoreStartedLedger(new LocalQuotaLedger(crossed), spent);
    // a caller whose connections land on two workers sees one rising head and polls its filters on either
    const heads = cluster.isWorker ? new WorkerHeads() : undefined;
    const handles = cluster.isWorker ? new WorkerHandles() : undefined;
    return {
      limiter: undefined,
      quotas,
      sharedQuotas: undefined,
      heads,
      handles,
      answers: undefined,
      async close() {
        heads?.close();
        handles?.close();
        await quotas.close();
      },
    };
  }
  const [buckets, ledger, heads, handles, answers] = await Promise.all([
    import("../limits/shared-buckets.js"),
    import("../plans/shared-quotas.js"),
    import("../answers/shared-heads.js"),
    import("../upstream/shared-handles.js"),
    import("../cache/shared-answers.js"),
  ]);
  const limiter = new buckets.SharedTokenBuckets(redis, logger);
  // a counter Redis lost starts from the account store's usage counts (docs/plans.md, "Many instances")
  const quotas = new ledger.SharedQuotaLedger(redis, logger, crossed, spent);
  // a caller behind a balancer sees a rising head
  const sharedHeads = new heads.SharedHeads(redis, logger);
  // and polls a filter through one instance that it made through another
  const sharedHandles = new handles.SharedHandles(redis, logger);
  // final answers, behind each instance's own cache (docs/cache.md, "Many instances"): whatever the
  // start's `cache.enabled`, since a label's own setting, or a reload, may turn a label's cache on
  const sharedAnswers = new answers.SharedAnswers(redis, undefined, logger);
  const [shared] = await Promise.all([
    limiter.ready(readyMs),
    quotas.ready(readyMs),
    sharedHandles.ready(readyMs),
  ]);
  // a Redis that never answered is never lost, so no later line would say it was not there
  if (!shared)
    logger.log(
      "warn",
      "shared limits: Redis did not answer at start; each instance limits alone until it does",
      {
        waitedMs: readyMs,
        reason: limiter.lastError,
      },
    );
  return {
    limiter,
    quotas,
    sharedQuotas: quotas,
    heads: sharedHeads,
    handles: sharedHandles,
    answers: sharedAnswers,
    async close() {
      // a stop while Redis is away waits for it as long as calls in flight may take, for the quotas
      await Promise.all([limiter.close(), sharedHeads.close(), quotas.close(config.limits.drainTimeoutMs)]);
      sharedAnswers?.close();
      sharedHandles.close();
    },
  };
}
