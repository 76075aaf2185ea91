import { isPostgresUrl } from "../../store/database-url.js";
import { PostgresAccountStore } from "./postgres-store.js";
import { SqliteAccountStore } from "./sqlite-store.js";
import type { AccountStore } from "./types.js";

/**
 * The store `accounts.database` names: a `postgres://` URL for many instances (docs/deployment.md), else a
 * SQLite file, the embedded default. Either is created or migrated on open.
 */
export function openAccountStore(database: string): Promise<AccountStore> {
  return isPostgresUrl(database)
    ? PostgresAccountStore.open(database)
    : Promise.resolve(new SqliteAccountStore(database));
}
