import type { RateSpec } from "../config/types.js";
import type { GrantFeed, GrantStatus, KeyGrant } from "./grants.js";
import { KeyRules, settingsIdentity } from "./key-settings.js";
import { reconnectDelay } from "./reconnect-backoff.js";
import { MAX_TIMER_MS } from "./token-lifetime.js";
import type { KeyStore, Principal } from "./types.js";

interface Entry {
  readonly principal: Principal;
  readonly expiresAt: number | undefined;
}

/**
 * The proxy's view of the account store: every usable key held in memory by digest, so a lookup never
 * touches disk or network and a flood of unknown keys costs one Map probe each and never reaches the store.
 * It follows the store's change feed; `refresh()` applies what changed (the control plane calls it through
 * `onKeysChanged` when both run in one process). While the store cannot be reached it keeps serving the
 * keys it holds, reports it through `onStatus`, and catches up when the store is back. A read of what
 * changed that fails is tried again with the listening connection's backoff (reconnect-backoff.ts) until
 * one succeeds: the change it missed may be the last the store ever announces. While the feed itself says
 * the store is lost, the feed's own reconnection does the retrying, and asks for the read once it is back.
 */
export class CachedKeyStore implements KeyStore {
  readonly #feed: GrantFeed;
  #defaultRate: RateSpec;
  readonly #now: () => number;
  readonly #byHash = new Map<string, Entry>();
  readonly #hashById = new Map<number, string>();
  /** The settings of keys that have some (settingsIdentity): a change of them is told to onWithdrawn's listeners. */
  readonly #settingsById = new Map<number, string>();
  #revision = 0;
  #unwatch: (() => void) | undefined;
  readonly #listeners = new Set<(keyId: string) => void>();
  readonly #statusListeners = new Set<(status: GrantStatus) => void>();
  #reachable = true;
  /** The refresh under way, and whether another must follow it: refreshes never overlap. */
  #running: Promise<void> | undefined;
  #again = false;
  /** The next try of a read that failed, and how many have failed in a row. */
  #retry: NodeJS.Timeout | undefined;
  #failures = 0;
  /** Whether the feed says it has the store (its reads may fail all the same). */
  #feedUp = true;
  #closed = false;
  /** Set for the next key expiry: its key's connections end then (`onWithdrawn`). */
  #expiry: NodeJS.Timeout | undefined;

  constructor(feed: GrantFeed, defaultRate: RateSpec, now: () => number = Date.now) {
    this.#feed = feed;
    this.#defaultRate = defaultRate;
    this.#now = now;
  }

  /**
   * A reload's `defaultRate`: the keys without a rate of their own take it from their next call, and their
   * WebSocket connections end (`onWithdrawn`), as a static key's do when a reload changes its rate.
   */
  useDefaultRate(rate: RateSpec): void {
    const before = this.#defaultRate;
    if (rate.perSecond === before.perSecond && rate.burst === before.burst) return;
    this.#defaultRate = rate;
    for (const [hash, entry] of this.#byHash) {
      if (entry.principal.rate !== before) continue;
      this.#byHash.set(hash, { ...entry, principal: { ...entry.principal, rate } });
      for (const listener of this.#listeners) listener(entry.principal.keyId);
    }
  }

  /** A cache holding every grant of the store; it fails when the store cannot be read at all. */
  static async open(feed: GrantFeed, defaultRate: RateSpec, now?: () => number): Promise<CachedKeyStore> {
    const cache = new CachedKeyStore(feed, defaultRate, now);
    try {
      await cache.#load();
    } catch (error) {
      await feed.close();
      throw error;
    }
    return cache;
  }

  lookup(digest: string): Principal | undefined {
    const entry = this.#byHash.get(digest);
    if (entry === undefined) return undefined;
    // Expiry is checked on use, so a free test ends on time without any job running.
    if (entry.expiresAt !== undefined && entry.expiresAt <= this.#now()) return undefined;
    return entry.principal;
  }

  /**
   * Applies the store's changes since the last refresh. It never throws: a store that cannot be read is
   * reported through `onStatus`, the keys already held keep working, and the read is tried again.
   */
  refresh(): Promise<void> {
    if (this.#running !== undefined) {
      this.#again = true;
      return this.#running;
    }
    clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#running = (async () => {
      let failure: Error | undefined;
      do {
        this.#again = false;
        try {
          await this.#load();
          failure = undefined;
        } catch (error) {
          failure = error as Error;
        }
      } while (this.#again && !this.#closed);
      this.#running = undefined;
      if (failure === undefined) {
        this.#failures = 0;
        this.#setStatus({ reachable: true });
      } else {
        this.#setStatus({ reachable: false, reason: failure.message });
        this.#retryLater();
      }
    })();
    return this.#running;
  }

  /** Follows the feed: changes made by the control plane or any other instance sharing the store. */
  follow(): void {
    this.#unwatch ??= this.#feed.watch(
      () => void this.refresh(),
      (status) => {
        this.#feedUp = status.reachable;
        // Back: reachable once the read of what changed meanwhile, which the feed asks for, succeeds.
        if (!status.reachable) this.#setStatus(status);
      },
    );
  }

  /** The next try of a read that failed, unless the feed is reconnecting (it asks for a read once back). */
  #retryLater(): void {
    if (this.#closed || this.#retry !== undefined) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      if (this.#feedUp && !this.#closed) void this.refresh();
    }, reconnectDelay(this.#failures));
    this.#failures += 1;
  }

  /** Whether the last word from the store was good. */
  get reachable(): boolean {
    return this.#reachable;
  }

  /** Called when the store becomes unreachable or reachable again. */
  onStatus(listener: (status: GrantStatus) => void): void {
    this.#statusListeners.add(listener);
  }

  /**
   * Called with a key's id when it stops being usable (revoked, expired, or its account no longer active), and when
   * its owner changed its settings.
   */
  onWithdrawn(listener: (keyId: string) => void): void {
    this.#listeners.add(listener);
  }

  /** Stops following the feed and closes it. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    clearTimeout(this.#expiry);
    this.#unwatch?.();
    await this.#running;
    await this.#feed.close();
  }

  async #load(): Promise<void> {
    const { revision, grants } = await this.#feed.changesSince(this.#revision);
    for (const grant of grants) this.#apply(grant);
    this.#revision = revision;
    this.#watchExpiry();
  }

  /**
   * A key that expires (a free test's end, a rotated key's grace) is refused from then on by `lookup`; what
   * it opened before (a WebSocket, a stream) ends then too, as a revoked key's does: its listeners are told
   * at the earliest expiry of the keys held, and the one after is watched.
   */
  #watchExpiry(): void {
    clearTimeout(this.#expiry);
    this.#expiry = undefined;
    if (this.#closed) return;
    let next = Number.POSITIVE_INFINITY;
    for (const entry of this.#byHash.values())
      if (entry.expiresAt !== undefined && entry.expiresAt < next) next = entry.expiresAt;
    if (next === Number.POSITIVE_INFINITY) return;
    this.#expiry = setTimeout(() => this.#expire(), Math.min(Math.max(0, next - this.#now()), MAX_TIMER_MS));
    this.#expiry.unref();
  }

  #expire(): void {
    const now = this.#now();
    for (const [digest, entry] of this.#byHash)
      if (entry.expiresAt !== undefined && entry.expiresAt <= now) {
        this.#byHash.delete(digest);
        for (const listener of this.#listeners) listener(entry.principal.keyId);
      }
    this.#watchExpiry();
  }

  #setStatus(status: GrantStatus): void {
    if (status.reachable === this.#reachable) return;
    this.#reachable = status.reachable;
    for (const listener of this.#statusListeners) listener(status);
  }

  #apply(grant: KeyGrant): void {
    const previous = this.#hashById.get(grant.id);
    const settingsBefore = this.#settingsById.get(grant.id);
    if (previous !== undefined) this.#byHash.delete(previous);
    this.#hashById.delete(grant.id);
    this.#settingsById.delete(grant.id);
    if (grant.status !== "active" || grant.accountStatus !== "active") {
      if (previous !== undefined) for (const listener of this.#listeners) listener(grant.prefix);
      return;
    }
    this.#hashById.set(grant.id, grant.keyHash);
    const settings = grant.settings === undefined ? "" : settingsIdentity(grant.settings);
    if (settings !== "") this.#settingsById.set(grant.id, settings);
    // New settings hold for a WebSocket's every message: its connections end, and come back under them.
    if (previous !== undefined && settings !== (settingsBefore ?? ""))
      for (const listener of this.#listeners) listener(grant.prefix);
    this.#byHash.set(grant.keyHash, {
      expiresAt: grant.expiresAt,
      principal: {
        keyId: grant.prefix,
        networks: grant.networks === "*" ? "*" : new Set(grant.networks),
        archive: grant.archive,
        plan: grant.plan,
        rate: grant.rate ?? this.#defaultRate,
        accountId: `account:${grant.accountId}`,
        quotaScope: grant.quotaScope,
        rules: KeyRules.of(grant.settings),
      },
    });
  }
}
