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
import { dashboardNetworks, orderablePlans, planOffer } from "./dashboard/catalog.js";
import { DashboardFiles } from "./dashboard/serve.js";
import { gatewayOrigin, KEY_PLACEHOLDER } from "./endpoint-urls.js";
import { networksOf, servedEndpoints } from "./served-endpoints.js";

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
  /**
   * The port the gateway took, where its config says 0 (any free port): the dashboard's URLs and the key
   * e-mails name it from then on. A gateway in the same process (the demo) says it once it listens.
   */
  gatewayListening(port: number): void;
  close(): Promise<void>;
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
    Partial<Pick<GatewayConfig, "defaultRate" | "plans" | "upstreams">>;
}): Promise<ControlPlane> {
  const { logger } = options;
  // The e-mails' links name the self-service listener (without publicUrl): one on port 0 takes any free port,
  // which they name once it listens.
  const listen = { ...options.config.listen };
  const config: AccountsConfig = { ...options.config, listen };
  const store = await openAccountStore(config.database);
  const listeners = new Set<() => void | Promise<void>>();
  const gateway = options.gateway ?? DEFAULT_CONFIG;
  // The e-mails and the dashboard take every URL they show from here (endpoint-urls.ts).
  const origin = { ...gatewayOrigin(gateway) };
  // what is offered, e-mailed and shown: the endpoints the deployment gives nodes (served-endpoints.ts)
  const endpoints = servedEndpoints(endpointsByLabel, gateway.upstreams);
  const served = networksOf(endpoints);
  const networks = new Set([...options.networks].filter((network) => served.has(network)));
  const service = new AccountService({
    store,
    mailer: options.mailer ?? createMailer(config.mail),
    config,
    plans: gateway.plans ?? DEFAULT_CONFIG.plans,
    networks,
    origin,
    endpoints,
    onChange: async () => {
      await Promise.all([...listeners].map((listener) => listener()));
    },
    ...(options.now === undefined ? {} : { now: options.now }),
    noticeIntervalMs: config.followIntervalMs,
    onMailError: (error) => logger.log("warn", "quota e-mail not sent: retried", { reason: error.message }),
    onSignInMailError: (error) =>
      logger.log("error", "sign-up or sign-in e-mail not sent", { reason: error.message }),
  });
  const plans = gateway.plans ?? DEFAULT_CONFIG.plans;
  const catalog = {
    keyPlaceholder: KEY_PLACEHOLDER,
    support: gateway.support,
    // A key without a rate of its own has the proxies' default: the page says which.
    defaultRate: gateway.defaultRate ?? DEFAULT_CONFIG.defaultRate,
    // Whether e-mails go to an outbox folder, having no SMTP server: the page says so, never where (a path
    // on the server is not a customer's to read).
    mail: config.mail.smtp === undefined ? { outbox: true } : {},
    networks: dashboardNetworks(endpoints, origin),
    plans: orderablePlans(plans),
    // the free test's own terms, where the deployment has the plan
    freeTest: {
      days: config.freeTest.days,
      ...(plans["free-test"] === undefined ? {} : { terms: planOffer("free-test", plans["free-test"]) }),
    },
  };
  const api = createAccountsApi(service, options.trustedProxies, logger, {
    files: new DashboardFiles(gateway.support),
    catalog,
    secure: config.publicUrl?.startsWith("https://") ?? false,
    sessionSeconds: config.sessionHours * 3600,
  });
  api.on("listening", () => {
    const address = api.address();
    if (listen.port === 0 && typeof address === "object" && address !== null) listen.port = address.port;
  });
  return {
    store,
    service,
    api,
    onKeysChanged: (listener) => listeners.add(listener),
    gatewayListening(port) {
      if (origin.port !== 0) return;
      origin.port = port;
      catalog.networks = dashboardNetworks(endpoints, origin);
    },
    async close() {
      await new Promise<void>((resolve) => {
        api.close(() => resolve());
        api.closeAllConnections();
      });
      await service.quotaMail?.close();
      await store.close();
    },
  };
}
