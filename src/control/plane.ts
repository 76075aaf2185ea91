import type { Server } from "node:http";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CONFIG } from "../config/defaults.js";
import type { AccountsConfig, GatewayConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import { createAccountsApi } from "./accounts/api.js";
import { createMailer, type Mailer } from "./accounts/mailer.js";
import { openAccountStore } from "./accounts/open-store.js";
import { AccountService } from "./accounts/service.js";
import type { AccountStore } from "./accounts/types.js";
import { networkCatalog } from "./dashboard/catalog.js";
import { DashboardFiles } from "./dashboard/serve.js";

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

/**
 * The gateway's URL templates (`{label}` and `{key}` stand for the label and the key): TLS on a real domain,
 * plain HTTP with the port on `localhost`, as `npm start` serves.
 */
export function gatewayUrls(gateway: Pick<GatewayConfig, "domain" | "listen">): { http: string; ws: string } {
  const local = gateway.domain === "localhost";
  const host = local ? `{label}.localhost:${gateway.listen.port}` : `{label}.${gateway.domain}`;
  return {
    http: `${local ? "http" : "https"}://${host}/{key}/`,
    ws: `${local ? "ws" : "wss"}://${host}/{key}`,
  };
}

export async function createControlPlane(options: {
  config: AccountsConfig;
  networks: ReadonlySet<string>;
  trustedProxies: readonly string[];
  logger: Logger;
  mailer?: Mailer;
  now?: () => number;
  /**
   * Where callers reach the gateway and whom they write to, for the dashboard's endpoints and "not on your
   * plan" pages: the deployment config's `domain`, `listen.port` and `support`.
   */
  gateway?: Pick<GatewayConfig, "domain" | "listen" | "support"> &
    Partial<Pick<GatewayConfig, "defaultRate">>;
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
  const gateway = options.gateway ?? DEFAULT_CONFIG;
  const api = createAccountsApi(service, options.trustedProxies, logger, {
    files: new DashboardFiles(),
    catalog: {
      gateway: gatewayUrls(gateway),
      support: gateway.support,
      // A key without a rate of its own has the proxies' default: the page says which.
      defaultRate: gateway.defaultRate ?? DEFAULT_CONFIG.defaultRate,
      // Where e-mails go without an SMTP server, which the page names after each one it sends.
      mail: config.mail.smtp === undefined ? { outbox: config.mail.outbox } : {},
      networks: networkCatalog(endpointsByLabel),
    },
    secure: config.publicUrl?.startsWith("https://") ?? false,
    sessionSeconds: config.sessionHours * 3600,
  });
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
