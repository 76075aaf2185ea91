import type { Server } from "node:http";
import type { AccountsConfig, RateSpec } from "../config/types.js";
import type { Logger } from "../log.js";
import { createAccountsApi } from "./api.js";
import { CachedKeyStore } from "./key-cache.js";
import { createMailer, type Mailer } from "./mailer.js";
import { AccountService } from "./service.js";
import { SqliteAccountStore } from "./sqlite-store.js";
import type { AccountStore } from "./types.js";

export interface Accounts {
  readonly store: AccountStore;
  readonly keys: CachedKeyStore;
  readonly service: AccountService;
  readonly api: Server;
  close(): Promise<void>;
}

/** The account store, the data plane's key cache over it, the service and its self-service API. */
export function setUpAccounts(options: {
  config: AccountsConfig;
  defaultRate: RateSpec;
  networks: ReadonlySet<string>;
  trustedProxies: readonly string[];
  logger: Logger;
  mailer?: Mailer;
  now?: () => number;
}): Accounts {
  const { config, logger } = options;
  const store = new SqliteAccountStore(config.database);
  const keys = new CachedKeyStore(store, options.defaultRate, options.now);
  keys.follow(config.followIntervalMs);
  const service = new AccountService({
    store,
    mailer: options.mailer ?? createMailer(config.mail),
    config,
    networks: options.networks,
    onChange: () => keys.refresh(),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const api = createAccountsApi(service, options.trustedProxies, logger);
  return {
    store,
    keys,
    service,
    api,
    async close() {
      keys.stop();
      await new Promise<void>((resolve) => {
        api.close(() => resolve());
        api.closeAllConnections();
      });
      store.close();
    },
  };
}
