import type { Redis } from "ioredis";
import type { SharedLimitsConfig } from "../config/types.js";
import { logDropped, reconnectWhenSilent, sharedRedis, sharedRedisOptions } from "../limits/redis-options.js";
import type { Logger } from "../log.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { SHARE_HOLD_MS, SHARED_HEAD_KEEP_MS } from "./served-head.js";

/**
 * Raises a label's stored head to ARGV[1] when it is higher, keeps it ARGV[2] ms, and then tells every
 * instance on the channel ARGV[3] with the message ARGV[4]. One round trip, and no instance hears of a head
 * that is not the highest stored.
 */
const RAISE_SCRIPT = `
local stored = tonumber(redis.call('GET', KEYS[1]) or '-1')
if tonumber(ARGV[1]) <= stored then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
`;

/**
 * The channel of one Redis database's heads: Redis' pub/sub spans its databases, and deployments kept apart
 * by their database index (staging on /1, production on /2) must not raise each other's heads.
 */
function channelOf(db: number): string {
  return `gateway:heads:${db}`;
}

type RaiseCommand = (
  key: string,
  height: number,
  keepMs: number,
  channel: string,
  message: string,
) => Promise<number>;

/**
 * How often the subscriber, which sends nothing else, PINGs Redis: a subscriber whose path went silent (a
 * partition, a Redis host that died: no FIN, no RST) would otherwise hear nothing for good after Redis was
 * back, and no PING answered within its command timeout makes its connection anew.
 */
export const SUBSCRIBER_PING_MS = 2_000;

/**
 * The served head of every label, shared by every proxy instance and worker through the Redis of
 * `sharedLimits` (docs/upstreams.md, "Answers across nodes"): each rise of a label's served head is stored
 * and published, and each instance raises its own to what the others served. A caller behind a load
 * balancer then sees a rising head too. While Redis is away, each instance keeps its own.
 */
export class SharedHeads {
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #raise: RaiseCommand;
  readonly #channel: string;
  /** The groups of the configs being served, by label: a reload adds its own, a retired config leaves. */
  readonly #groups = new Map<string, Set<UpstreamGroup>>();
  /** By label, the rises this instance published and has not heard back yet (`#share`). */
  readonly #unheard = new Map<string, { height: number; resolve: () => void }[]>();
  /** Told of each failed command on `#redis`: a connection gone silent is made anew. */
  readonly #silent: (error: unknown) => void;
  readonly #ping: NodeJS.Timeout;
  /** How long an answer that raised a head is held for the others to hear of it (served-head.ts `holdMs`). */
  readonly #holdMs: number;

  /** `logger` hears of a connection dropped as silent (docs/deployment.md, "Redis silent"). */
  constructor(config: SharedLimitsConfig, logger?: Logger) {
    this.#holdMs = config.headHoldMs ?? SHARE_HOLD_MS;
    this.#redis = sharedRedis(config.redis, sharedRedisOptions("gateway:head:"));
    this.#channel = channelOf(this.#redis.options.db ?? 0);
    this.#redis.defineCommand("gatewayRaiseHead", { numberOfKeys: 1, lua: RAISE_SCRIPT });
    this.#raise = (this.#redis as unknown as { gatewayRaiseHead: RaiseCommand }).gatewayRaiseHead.bind(
      this.#redis,
    );
    // The subscriber subscribes each time it is connected: a SUBSCRIBE queued while Redis was down at the
    // start is dropped at the first failed attempt (maxRetriesPerRequest 0), and would never be made.
    // ioredis's own resubscription is off: it sends its SUBSCRIBE at each reconnection with no handler for
    // its failure, so a connection cut again before Redis answered it (CLIENT KILL, a restart) rejected it
    // unhandled and ended the process.
    this.#subscriber = sharedRedis(config.redis, { ...sharedRedisOptions(""), autoResubscribe: false });
    this.#subscriber.on("message", (_channel: string, message: string) => this.#heard(message));
    this.#subscriber.on("ready", () => {
      this.#subscriber.subscribe(this.#channel).catch(() => {});
    });
    this.#silent = reconnectWhenSilent(this.#redis, logDropped(logger, "shared heads"));
    const silentSubscriber = reconnectWhenSilent(
      this.#subscriber,
      logDropped(logger, "shared heads' subscriber"),
    );
    this.#ping = setInterval(() => {
      if (this.#subscriber.status === "ready") this.#subscriber.ping().catch(silentSubscriber);
    }, SUBSCRIBER_PING_MS);
    this.#ping.unref();
    // Failed reconnections are retried with backoff; meanwhile each instance keeps its own heads.
    this.#redis.on("error", () => {});
    this.#subscriber.on("error", () => {});
    // Heads the others stored while this one could not ask (it starts before Redis answers, or it was away).
    this.#redis.on("ready", () => {
      for (const groups of this.#groups.values()) for (const group of groups) this.#seed(group);
    });
  }

  /** Shares the heads of a served config's groups: their rises go out, and the others' come in. */
  attach(groups: readonly UpstreamGroup[]): void {
    for (const group of groups) {
      const label = group.label;
      const set = this.#groups.get(label) ?? new Set<UpstreamGroup>();
      this.#groups.set(label, set.add(group));
      // the answer that raised it is held until the others were told (served-head.ts `sharing`)
      group.served.onRise = (height) => this.#share(label, height);
      group.served.holdMs = this.#holdMs;
      if (this.#redis.status === "ready") this.#seed(group);
    }
  }

  /**
   * Stores and publishes a rise; settles once this instance's own subscriber hears it (or a higher head of
   * the label) back: the script's reply came back before its publication reached another instance, by up
   * to a millisecond and more (test/answers/shared-head-held.test.ts). Settles
   * at once when a higher head was stored already (its publication went before), or Redis failed.
   */
  #share(label: string, height: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const unheard = this.#unheard.get(label) ?? [];
      this.#unheard.set(label, unheard);
      // a subscriber that hears nothing (Redis away) keeps a few; the answers went out at their deadline
      if (unheard.push({ height, resolve }) > 8) unheard.shift()?.resolve();
      const gone = (error?: unknown) => {
        this.#silent(error);
        const at = unheard.findIndex((one) => one.resolve === resolve);
        if (at >= 0) unheard.splice(at, 1);
        resolve();
      };
      this.#raise(label, height, SHARED_HEAD_KEEP_MS, this.#channel, `${label} ${height}`).then((raised) => {
        if (raised === 0) gone();
      }, gone);
    });
  }

  /** The group's served head rises to what the others stored for its label. */
  #seed(group: UpstreamGroup): void {
    this.#redis
      .get(group.label)
      .then((stored) => {
        // a head read at a (re)connection is a reading, not a block the chain just made
        if (stored !== null) group.served.raiseFromPeer(Number(stored), false);
      })
      .catch(this.#silent);
  }

  /** A retired config's groups no longer take what the others served. */
  detach(groups: readonly UpstreamGroup[]): void {
    for (const group of groups) {
      group.served.onRise = undefined;
      this.#groups.get(group.label)?.delete(group);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#ping);
    this.#redis.disconnect();
    this.#subscriber.disconnect();
  }

  #heard(message: string): void {
    const space = message.lastIndexOf(" ");
    const height = Number(message.slice(space + 1));
    if (space < 0 || !Number.isSafeInteger(height)) return;
    const label = message.slice(0, space);
    for (const group of this.#groups.get(label) ?? []) group.served.raiseFromPeer(height);
    // this instance's own rises, heard back: the others have been told
    const unheard = this.#unheard.get(label);
    if (unheard === undefined) return;
    for (let i = unheard.length - 1; i >= 0; i--) {
      const one = unheard[i] as { height: number; resolve: () => void };
      if (one.height > height) continue;
      unheard.splice(i, 1);
      one.resolve();
    }
  }
}
