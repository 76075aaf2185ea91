import { setTimeout as sleep } from "node:timers/promises";
import type { Redis } from "ioredis";
import type { FilterSpan } from "../answers/range-plan.js";
import type { SharedLimitsConfig } from "../config/types.js";
import {
  logDropped,
  reconnectWhenSilent,
  redisReady,
  sharedRedis,
  sharedRedisOptions,
} from "../limits/redis-options.js";
import type { Logger } from "../log.js";
import type { UpstreamGroup } from "./group.js";
import { HANDLE_IDLE_MS, type HandleShare, type SharedHandle } from "./node-states.js";

/** How long after a recall that found nothing it is made again (recall). */
export const RECALL_AGAIN_MS = 150;

/**
 * The states nodes made for callers (filters: registry `reads.handles`), shared by every proxy instance and
 * worker through the Redis of `sharedLimits` (docs/upstreams.md, "State a node made: filters"). A caller
 * behind a load balancer makes a filter through one instance and polls it through another: each poll
 * still reaches the node that made it, and another caller's poll of it is still refused. Per state, two
 * keys: its node, by its caller and name; and its caller, by its name; and for a filter a third, its range
 * as it was made (`method from to`), which bounds its logs' scan. The range has a key of its own so that
 * the node's value stays the node's name alone, as every earlier instance reads it during a rolling
 * deploy. While Redis is away, each instance keeps its own, as without it.
 */
export class SharedHandles {
  readonly #redis: Redis;
  /** The served config's groups, whose states go out. */
  readonly #groups = new Set<UpstreamGroup>();
  /** Told of each failed command: a connection whose path went silent is made anew. */
  readonly #silent: (error: unknown) => void;

  /** `logger` hears of a connection dropped as silent (docs/deployment.md, "Redis silent"). */
  constructor(config: SharedLimitsConfig, logger?: Logger) {
    this.#redis = sharedRedis(config.redis, sharedRedisOptions("gateway:handle:"));
    // Failed reconnections are retried with backoff; meanwhile each instance keeps its own states.
    this.#redis.on("error", () => {});
    this.#silent = reconnectWhenSilent(this.#redis, logDropped(logger, "shared filters"));
    // the states made while Redis was away (or before it first answered) go out once it answers: a filter
    // made then was this instance's alone for as long as it was polled, and another's polls missed it
    this.#redis.on("ready", () => {
      for (const group of this.#groups) group.states.shareAll();
    });
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
    for (const group of groups) {
      group.states.share = this.#shareOf(`${group.label}:${group.mount}`);
      this.#groups.add(group);
    }
  }

  /** A retired config's groups keep their own. */
  detach(groups: readonly UpstreamGroup[]): void {
    for (const group of groups) {
      group.states.share = undefined;
      this.#groups.delete(group);
    }
  }

  close(): void {
    this.#redis.disconnect();
  }

  /** One group's share: its keys begin with its label and mount, whose nodes are its own. */
  #shareOf(group: string): HandleShare {
    const redis = this.#redis;
    const silent = this.#silent;
    const nodeKey = (owner: string, name: string) => `${group}:node:${owner}:${name}`;
    const ownerKey = (name: string) => `${group}:owner:${name}`;
    const spanKey = (owner: string, name: string) => `${group}:span:${owner}:${name}`;
    return {
      made(owner, name, node, span) {
        const made = redis
          .multi()
          .set(nodeKey(owner, name), node, "PX", HANDLE_IDLE_MS)
          .set(ownerKey(name), owner, "PX", HANDLE_IDLE_MS);
        if (span !== undefined)
          made.set(
            spanKey(owner, name),
            `${span.method} ${span.from} ${span.to ?? ""}`,
            "PX",
            HANDLE_IDLE_MS,
          );
        made.exec().catch(silent);
      },
      kept(owner, name) {
        redis
          .multi()
          .pexpire(nodeKey(owner, name), HANDLE_IDLE_MS)
          .pexpire(ownerKey(name), HANDLE_IDLE_MS)
          .pexpire(spanKey(owner, name), HANDLE_IDLE_MS)
          .exec()
          .catch(silent);
      },
      async recall(owner, names): Promise<readonly SharedHandle[]> {
        const keys = names.flatMap((name) => [nodeKey(owner, name), ownerKey(name), spanKey(owner, name)]);
        // a failure is the caller's (its state is then this instance's alone); a silent path is made anew
        const read = () =>
          redis.mget(keys).catch((error: unknown) => {
            silent(error);
            throw error;
          });
        let values = await read();
        // The maker's write leaves its instance as the answer does, on a connection of its own: on a loaded
        // host, a poll sent through this instance at once can be read first. Names nobody is known to have
        // made are asked again a moment later, as the cluster's primary holds such a recall.
        if (values.every((value) => value === null)) {
          await sleep(RECALL_AGAIN_MS);
          values = await read();
        }
        return names.map((_, i) => {
          // the build before wrote a filter's range after its node, `node\nmethod from to`: read mid-deploy
          const [node, spanWithNode] = (values[3 * i] ?? "").split("\n");
          return {
            node: node || undefined,
            owner: values[3 * i + 1] ?? undefined,
            span: spanOf(values[3 * i + 2] ?? spanWithNode),
          };
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
