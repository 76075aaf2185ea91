import type { Server } from "node:http";
import type { AccountsConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import { createAccountsApi } from "./accounts/api.js";
import { createMailer, type Mailer } from "./accounts/mailer.js";
import { AccountService } from "./accounts/service.js";
import { SqliteAccountStore } from "./accounts/sqlite-store.js";
import type { AccountStore } from "./accounts/types.js";

/**
 * The control plane: the account store (it creates and migrates it), e-mail, the account service and
 * its self-service API. The proxy reads the same store's key grants (keys/grants.ts) and nothing else of
 * this; `onKeysChanged` lets a proxy running in the same process apply a change at once.
 */
export interface ControlPlane {
  readonly store: AccountStore;
  readonly service: AccountService;
  /** The self-service API, not yet listening. */
  readonly api: Server;
  /** Calls `listener` after every change this control plane makes to a key or an account. */
  onKeysChanged(listener: () => void): void;
  close(): Promise<void>;
}

export function createControlPlane(options: {
  config: AccountsConfig;
  networks: ReadonlySet<string>;
  trustedProxies: readonly string[];
  logger: Logger;
  mailer?: Mailer;
  now?: () => number;
}): ControlPlane {
  const { config, logger } = options;
  const store = new SqliteAccountStore(config.database);
  const listeners = new Set<() => void>();
  const service = new AccountService({
    store,
    mailer: options.mailer ?? createMailer(config.mail),
    config,
    networks: options.networks,
    onChange: () => {
      for (const listener of listeners) listener();
    },
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const api = createAccountsApi(service, options.trustedProxies, logger);
  return {
    store,
    service,
    api,
    onKeysChanged: (listener) => listeners.add(listener),
    async close() {
      await new Promise<void>((resolve) => {
        api.close(() => resolve());
        api.closeAllConnections();
      });
      store.close();
    },
  };
}
