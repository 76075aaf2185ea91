import type { RateSpec } from "../config/types.js";
import type { GrantFeed, KeyGrant } from "./grants.js";
import type { KeyStore, Principal } from "./types.js";

interface Entry {
  readonly principal: Principal;
  readonly expiresAt: number | undefined;
}

/**
 * The proxy's view of the account store: every usable key held in memory by digest, so a lookup never
 * touches disk and a flood of unknown keys costs one Map probe each and never reaches the store. It
 * follows the store's change feed; `refresh()` applies what changed at once (the control plane calls it
 * through `onKeysChanged` when both run in one process).
 */
export class CachedKeyStore implements KeyStore {
  readonly #feed: GrantFeed;
  readonly #defaultRate: RateSpec;
  readonly #now: () => number;
  readonly #byHash = new Map<string, Entry>();
  readonly #hashById = new Map<number, string>();
  #revision = 0;
  #unwatch: (() => void) | undefined;
  readonly #listeners = new Set<(keyId: string) => void>();

  constructor(feed: GrantFeed, defaultRate: RateSpec, now: () => number = Date.now) {
    this.#feed = feed;
    this.#defaultRate = defaultRate;
    this.#now = now;
    this.refresh();
  }

  lookup(digest: string): Principal | undefined {
    const entry = this.#byHash.get(digest);
    if (entry === undefined) return undefined;
    // Expiry is checked on use, so a free test ends on time without any job running.
    if (entry.expiresAt !== undefined && entry.expiresAt <= this.#now()) return undefined;
    return entry.principal;
  }

  /** Applies the store's changes since the last refresh. */
  refresh(): void {
    const { revision, grants } = this.#feed.changesSince(this.#revision);
    for (const grant of grants) this.#apply(grant);
    this.#revision = revision;
  }

  /** Follows the feed: changes made by the control plane or any other instance sharing the store. */
  follow(): void {
    this.#unwatch ??= this.#feed.watch(() => this.refresh());
  }

  /** Called with a key's id when it stops being usable (revoked, or its account no longer active). */
  onWithdrawn(listener: (keyId: string) => void): void {
    this.#listeners.add(listener);
  }

  /** Stops following the feed and closes it. */
  close(): void {
    this.#unwatch?.();
    this.#feed.close();
  }

  #apply(grant: KeyGrant): void {
    const previous = this.#hashById.get(grant.id);
    if (previous !== undefined) this.#byHash.delete(previous);
    this.#hashById.delete(grant.id);
    if (grant.status !== "active" || grant.accountStatus !== "active") {
      if (previous !== undefined) for (const listener of this.#listeners) listener(grant.prefix);
      return;
    }
    this.#hashById.set(grant.id, grant.keyHash);
    this.#byHash.set(grant.keyHash, {
      expiresAt: grant.expiresAt,
      principal: {
        keyId: grant.prefix,
        networks: grant.networks === "*" ? "*" : new Set(grant.networks),
        archive: grant.archive,
        plan: grant.plan,
        rate: grant.rate ?? this.#defaultRate,
      },
    });
  }
}
