import type { GatewayConfig } from "../config/types.js";
import { KeyStoreChain } from "../keys/chain.js";
import type { GrantFeed } from "../keys/grants.js";
import { CachedKeyStore } from "../keys/key-cache.js";
import { SqliteGrantFeed, SqliteUsageSink } from "../keys/sqlite-grants.js";
import { StaticKeyStore } from "../keys/static-store.js";
import type { KeyStore } from "../keys/types.js";
import { UsageCounter, type UsageSink } from "../keys/usage.js";
import type { Logger } from "../log.js";
import type { QuotaSpentSource } from "../plans/quota-ledger.js";
import type { NoticeSink } from "../plans/quota-notices.js";
import { isPostgresUrl, redacted, redactedText } from "../store/database-url.js";

/** The keys one proxy process knows. */
export interface ProxyKeys {
  readonly store: KeyStore;
  /** The store for a reloaded config: its static keys, then the same account store. */
  storeFor(config: GatewayConfig): KeyStore;
  /** The account store's grants, followed through its change feed; undefined without an account store. */
  readonly accounts: CachedKeyStore | undefined;
  /** Calls per key, flushed to the account store; undefined without one. */
  readonly usage: UsageCounter | undefined;
  /** Where quota crossings are written for the control plane to mail; undefined without a store. */
  readonly notices: NoticeSink | undefined;
  /** What a quota's scope spent, from the usage counts in the account store; undefined without one. */
  readonly spent: QuotaSpentSource | undefined;
  close(): Promise<void>;
}

/**
 * The deployment config's static keys first, then the account store's grants (keys/grants.ts): a
 * read-only view of the store the control plane writes. A SQLite store is read every
 * `accounts.followIntervalMs`; a PostgreSQL store announces its changes (LISTEN/NOTIFY), so it is read
 * only when something changed. The proxy's one write to the store is its usage counts, added every
 * `accounts.usageFlushIntervalMs`.
 */
export async function openKeyStores(config: GatewayConfig, logger: Logger): Promise<ProxyKeys> {
  const staticKeys = (config: GatewayConfig) => new StaticKeyStore(config.keys, config.defaultRate);
  if (config.accounts === undefined)
    return {
      store: new KeyStoreChain([staticKeys(config)]),
      storeFor: (next) => new KeyStoreChain([staticKeys(next)]),
      accounts: undefined,
      usage: undefined,
      notices: undefined,
      spent: undefined,
      close: async () => {},
    };
  const { database, followIntervalMs, usageFlushIntervalMs } = config.accounts;
  // pg is loaded only for a PostgreSQL store: a proxy without one does not hold its code
  const postgres = isPostgresUrl(database) ? await import("../keys/postgres-grants.js") : undefined;
  const feed: GrantFeed =
    postgres !== undefined
      ? new postgres.PostgresGrantFeed(database)
      : new SqliteGrantFeed(database, followIntervalMs);
  const accounts = await CachedKeyStore.open(feed, config.defaultRate).catch((error: Error) => {
    // a store that does not answer is a server to start; a PostgreSQL database that does not exist, its
    // operator's to create (the control plane makes the tables, not the database); tables, the control plane's
    const hint = /ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH/.test(error.message)
      ? "is its server running, and at this address?"
      : /database ".*" does not exist/.test(error.message)
        ? "create the database (createdb), then start the control plane once: it makes the tables"
        : "start the control plane once: it makes the tables";
    const why = redactedText(error.message, database);
    throw new Error(`the account store ${redacted(database)} cannot be read (${why}); ${hint}`);
  });
  // the store's connection ending at a stop (or a start that failed after it) is not the store's outage
  let closing = false;
  accounts.onStatus(({ reachable, reason }) => {
    if (closing) return;
    if (reachable) logger.log("info", "account store reachable again: caught up with its changes");
    else logger.log("warn", "account store unreachable: serving the keys held", { reason });
  });
  accounts.follow();
  const sink: UsageSink & NoticeSink & QuotaSpentSource =
    postgres !== undefined ? new postgres.PostgresUsageSink(database) : new SqliteUsageSink(database);
  const usage = new UsageCounter(sink, usageFlushIntervalMs, (error) =>
    logger.log("warn", "usage counts not flushed: kept for the next flush", { reason: error.message }),
  );
  return {
    store: new KeyStoreChain([staticKeys(config), accounts]),
    storeFor: (next) => {
      accounts.useDefaultRate(next.defaultRate);
      return new KeyStoreChain([staticKeys(next), accounts]);
    },
    accounts,
    usage,
    notices: sink,
    spent: sink,
    close: async () => {
      closing = true;
      // a stop during an outage waits for the store as long as it lets calls in flight finish
      await usage
        .close(config.limits.drainTimeoutMs, (error) =>
          logger.log("warn", "usage counts not flushed yet at stop: trying again until the store answers", {
            reason: error.message,
          }),
        )
        .catch((error: Error) =>
          logger.log("warn", "usage counts not flushed at stop", { reason: error.message }),
        );
      await accounts.close();
    },
  };
}
