import type { Server } from "node:http";
import type { AccountsConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import { createAccountsApi } from "./accounts/api.js";
import { createMailer, type Mailer } from "./accounts/mailer.js";
import { openAccountStore } from "./accounts/open-store.js";
import { AccountService } from "./accounts/service.js";
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
  /** Calls `listener` after every change this control plane makes to a key or an account, and awaits it. */
  onKeysChanged(listener: () => void | Promise<void>): void;
  close(): Promise<void>;
}

export async function createControlPlane(options: {
  config: AccountsConfig;
  networks: ReadonlySet<string>;
  trustedProxies: readonly string[];
  logger: Logger;
  mailer?: Mailer;
  now?: () => number;
}): Promise<ControlPlane> {
  const { config, logger } = options;
  const store = await openAccountStore(config.database);
  const listeners = new Set<() => void | Promise<void>>();
  const service = new AccountService({
    store,
    mailer: options.mailer ?? createMailer(config.mail),
    config,
    networks: options.networks,
    onChange: async () => {
      await Promise.all([...listeners].map((listener) => listener()));
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
      await store.close();
    },
  };
}
