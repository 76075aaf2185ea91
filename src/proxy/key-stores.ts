import type { GatewayConfig } from "../config/types.js";
import { KeyStoreChain } from "../keys/chain.js";
import { CachedKeyStore } from "../keys/key-cache.js";
import { SqliteGrantFeed, SqliteUsageSink } from "../keys/sqlite-grants.js";
import { StaticKeyStore } from "../keys/static-store.js";
import type { KeyStore } from "../keys/types.js";
import { UsageCounter } from "../keys/usage.js";

/** The keys one proxy process knows. */
export interface ProxyKeys {
  readonly store: KeyStore;
  /** The account store's grants, followed through its change feed; undefined without an account store. */
  readonly accounts: CachedKeyStore | undefined;
  /** Calls per key, flushed to the account store; undefined without one. */
  readonly usage: UsageCounter | undefined;
  close(): void;
}

/**
 * The deployment config's static keys first, then the account store's grants (keys/grants.ts): a
 * read-only view of the store the control plane writes, followed every `accounts.followIntervalMs`. The
 * proxy's one write to the store is its usage counts, added every `accounts.usageFlushIntervalMs`.
 */
export function openKeyStores(config: GatewayConfig): ProxyKeys {
  const accounts =
    config.accounts &&
    new CachedKeyStore(
      new SqliteGrantFeed(config.accounts.database, config.accounts.followIntervalMs),
      config.defaultRate,
    );
  accounts?.follow();
  const usage =
    config.accounts &&
    new UsageCounter(new SqliteUsageSink(config.accounts.database), config.accounts.usageFlushIntervalMs);
  const stores: KeyStore[] = [new StaticKeyStore(config.keys, config.defaultRate)];
  if (accounts !== undefined) stores.push(accounts);
  return {
    store: new KeyStoreChain(stores),
    accounts,
    usage,
    close: () => {
      usage?.close();
      accounts?.close();
    },
  };
}
