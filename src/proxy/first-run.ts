import { existsSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import type { GatewayConfig } from "../config/types.js";
import { adminCommand } from "../embedded.js";
import type { Logger } from "../log.js";
import { isPostgresUrl } from "../store/database-url.js";
import { sqliteNative } from "../store/sqlite-addon.js";
import { migrate } from "../store/sqlite-migrations.js";

/**
 * The embedded default's account store (.data/gateway.sqlite under the working directory), created empty
 * and migrated when it does not exist yet, as the control plane would create it: the binary copied alone to
 * a host starts with no setup, as the README says, and logs where the store is and how to issue a first
 * key with the operator CLI. Only for the embedded default: a store that a deployment file names and that
 * does not exist is more likely a wrong path than a first run, and the proxy refuses to start on it.
 */
export function createStoreOnFirstRun(config: GatewayConfig, logger: Logger): void {
  const database = config.accounts?.database;
  if (database === undefined || isPostgresUrl(database) || existsSync(database)) return;
  try {
    mkdirSync(dirname(database), { recursive: true });
    const db = new Database(database, sqliteNative());
    try {
      db.pragma("journal_mode = WAL");
      // An operator CLI run at the same moment may be creating it too.
      db.pragma("busy_timeout = 2000");
      migrate(db);
    } finally {
      db.close();
    }
  } catch (error) {
    throw new Error(`the account store ${database} cannot be created (${(error as Error).message})`);
  }
  const admin = adminCommand();
  logger.log("info", "account store created: issue a first key with the operator CLI", {
    database: resolve(database),
    firstKey: `${admin} accounts create --email you@example.com; ${admin} keys issue --account 1`,
    ...(Object.keys(config.upstreams).length > 0
      ? {}
      : {
          upstreams:
            "none: every label answers NO_UPSTREAM until GATEWAY_UPSTREAM_<LABEL> or --config names one",
        }),
  });
}
