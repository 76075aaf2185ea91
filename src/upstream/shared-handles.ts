import { Redis } from "ioredis";
import type { FilterSpan } from "../answers/range-plan.js";
import type { SharedLimitsConfig } from "../config/types.js";
import { redisReady, sharedRedisOptions } from "../limits/redis-options.js";
import type { UpstreamGroup } from "./group.js";
import { HANDLE_IDLE_MS, type HandleShare, type SharedHandle } from "./node-states.js";

/**
 * The states nodes made for callers (filters: registry `reads.handles`), shared by every proxy instance and
 * worker through the Redis of `sharedLimits` (docs/upstreams.md, "State a node made: filters"). A caller
 * behind a load balancer makes a filter through one instance and polls it through another: each poll
 * still reaches the node that made it, and another caller's poll of it is still refused. Per state, two
 * keys: its node, by its caller and name (with a filter's range as it was made, which bounds its logs'
 * scan: `node\nmethod from to`); and its caller, by its name. While Redis is away, each instance
 * keeps its own, as without it.
 */
export class SharedHandles {
  readonly #redis: Redis;

  constructor(config: SharedLimitsConfig) {
    this.#redis = new Redis(config.redis, sharedRedisOptions("gateway:handle:"));
    // Failed reconnections are retried with backoff; meanwhile each instance keeps its own states.
    this.#redis.on("error", () => {});
  }

  /**
   * Resolves once Redis answers, or after `timeoutMs`: a state made before then is this process's alone
   * (a command while disconnected fails at once).
   */
  ready(timeoutMs: number): Promise<boolean> {
    return redisReady(this.#redis, timeoutMs, () => this.#redis.status === "ready");
  }

  /** Shares the states of a served config's groups: those made here go out, the others' are asked for. */
  attach(groups: readonly UpstreamGroup[]): void {
    for (const group of groups) group.states.share = this.#shareOf(`${group.label}:${group.mount}`);
  }

  /** A retired config's groups keep their own. */
  detach(groups: readonly UpstreamGroup[]): void {
    for (const group of groups) group.states.share = undefined;
  }

  close(): void {
    this.#redis.disconnect();
  }

  /** One group's share: its keys begin with its label and mount, whose nodes are its own. */
  #shareOf(group: string): HandleShare {
    const redis = this.#redis;
    const nodeKey = (owner: string, name: string) => `${group}:node:${owner}:${name}`;
    const ownerKey = (name: string) => `${group}:owner:${name}`;
    return {
      made(owner, name, node, span) {
        const value = span === undefined ? node : `${node}\n${span.method} ${span.from} ${span.to ?? ""}`;
        redis
          .multi()
          .set(nodeKey(owner, name), value, "PX", HANDLE_IDLE_MS)
          .set(ownerKey(name), owner, "PX", HANDLE_IDLE_MS)
          .exec()
          .catch(() => {});
      },
      kept(owner, name) {
        redis
          .multi()
          .pexpire(nodeKey(owner, name), HANDLE_IDLE_MS)
          .pexpire(ownerKey(name), HANDLE_IDLE_MS)
          .exec()
          .catch(() => {});
      },
      async recall(owner, names): Promise<readonly SharedHandle[]> {
        const keys = names.flatMap((name) => [nodeKey(owner, name), ownerKey(name)]);
        const values = await redis.mget(keys);
        return names.map((_, i) => {
          const [node, span] = (values[2 * i] ?? "").split("\n");
          return { node: node || undefined, owner: values[2 * i + 1] ?? undefined, span: spanOf(span) };
        });
      },
    };
  }
}

/** A filter's range as `made` wrote it: `method from to`, an open end left empty. */
function spanOf(text: string | undefined): FilterSpan | undefined {
  const [method, from, to] = text?.split(" ") ?? [];
  if (method === undefined || from === undefined || to === undefined) return undefined;
  return { method, from: Number(from), to: to === "" ? undefined : Number(to) };
}
