import type { GatewayConfig } from "../config/types.js";
import { KeyStoreChain } from "../keys/chain.js";
import { CachedKeyStore } from "../keys/key-cache.js";
import { SqliteGrantFeed } from "../keys/sqlite-grants.js";
import { StaticKeyStore } from "../keys/static-store.js";
import type { KeyStore } from "../keys/types.js";

/** The keys one proxy process knows. */
export interface ProxyKeys {
  readonly store: KeyStore;
  /** The account store's grants, followed through its change feed; undefined without an account store. */
  readonly accounts: CachedKeyStore | undefined;
  close(): void;
}

/**
 * The deployment config's static keys first, then the account store's grants (keys/grants.ts): a
 * read-only view of the store the control plane writes, followed every `accounts.followIntervalMs`.
 */
export function openKeyStores(config: GatewayConfig): ProxyKeys {
  const accounts =
    config.accounts &&
    new CachedKeyStore(
      new SqliteGrantFeed(config.accounts.database, config.accounts.followIntervalMs),
      config.defaultRate,
    );
  accounts?.follow();
  const stores: KeyStore[] = [new StaticKeyStore(config.keys, config.defaultRate)];
  if (accounts !== undefined) stores.push(accounts);
  return { store: new KeyStoreChain(stores), accounts, close: () => accounts?.close() };
}
