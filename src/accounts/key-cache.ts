import type { RateSpec } from "../config/types.js";
import type { KeyStore, Principal } from "../keys/types.js";
import type { AccountStore, KeyGrant } from "./types.js";

interface Entry {
  readonly principal: Principal;
  readonly expiresAt: number | undefined;
}

/**
 * The data plane's view of the account store: every usable key held in memory by digest, so a lookup
 * never touches disk and a flood of unknown keys costs one Map probe each and never reaches the store.
 * The cache follows the store's change feed: `refresh()` runs after every change made through this
 * instance (so a revocation takes effect at once) and on a short timer for changes made elsewhere.
 */
export class CachedKeyStore implements KeyStore {
  readonly #store: AccountStore;
  readonly #defaultRate: RateSpec;
  readonly #now: () => number;
  readonly #byHash = new Map<string, Entry>();
  readonly #hashById = new Map<number, string>();
  #revision = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #listeners = new Set<(keyId: string) => void>();

  constructor(store: AccountStore, defaultRate: RateSpec, now: () => number = Date.now) {
    this.#store = store;
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
    const { revision, grants } = this.#store.changesSince(this.#revision);
    for (const grant of grants) this.#apply(grant);
    this.#revision = revision;
  }

  /** Follows changes made by other instances sharing the store. */
  follow(intervalMs: number): void {
    this.#timer = setInterval(() => this.refresh(), intervalMs);
    this.#timer.unref();
  }

  /** Called with a key's id when it stops being usable (revoked, or its account no longer active). */
  onWithdrawn(listener: (keyId: string) => void): void {
    this.#listeners.add(listener);
  }

  stop(): void {
    clearInterval(this.#timer);
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
