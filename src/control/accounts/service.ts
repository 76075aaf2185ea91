import type { AccountsConfig, PlanSpec } from "../../config/types.js";
import type { Endpoint } from "../../registry/types.js";
import type { GatewayOrigin } from "../endpoint-urls.js";
import { AccountAdmin } from "./account-admin.js";
import type { ServiceContext } from "./context.js";
import { Keys } from "./keys.js";
import type { Mailer } from "./mailer.js";
import { QuotaMail } from "./quota-mail.js";
import { RequestLimits } from "./request-limits.js";
import { Sessions } from "./sessions.js";
import type { AccountStore } from "./types.js";
import { UsageReports } from "./usage.js";

/**
 * Accounts and keys, in four parts that share one store (context.ts):
 * - `sessions`: sign-up by e-mail, sign-in by an e-mailed token, and the sessions they start;
 * - `keys`: free tests, orders, listing, rotation with a grace period, revocation; and the operator's
 *   issuing, rotating and revoking of any account's key;
 * - `usage`: calls per day and network, of one key or of a whole account;
 * - `admin`: the operator's account commands (create without confirmation, suspend, close).
 */
export class AccountService {
  readonly sessions: Sessions;
  readonly keys: Keys;
  readonly usage: UsageReports;
  readonly admin: AccountAdmin;
  /** The quota e-mails, sent every `noticeIntervalMs`; undefined without it (the operator CLI). */
  readonly quotaMail: QuotaMail | undefined;

  constructor(options: {
    store: AccountStore;
    mailer: Mailer;
    config: AccountsConfig;
    /** The deployment config's plans: what a customer may order, and how many keys of each. */
    plans: Readonly<Record<string, PlanSpec>>;
    networks: ReadonlySet<string>;
    /** Where callers reach the gateway, and the registry's labels: the URLs a key e-mail lists. */
    origin: GatewayOrigin;
    endpoints: ReadonlyMap<string, Endpoint>;
    /** Awaited after every change (context.ts says why). */
    onChange: () => void | Promise<void>;
    now?: () => number;
    /** How often quota notices are looked for and mailed; none are without it. */
    noticeIntervalMs?: number;
    onMailError?: (error: Error) => void;
    /** A sign-up or sign-in e-mail that was not sent (it goes after the answer: sessions.ts says why). */
    onSignInMailError?: (error: Error) => void;
  }) {
    const { store, mailer, config, plans, networks, origin, endpoints, onChange } = options;
    const context: ServiceContext = {
      store,
      config,
      plans,
      mail: (to, email) => mailer.send(to, email.subject, email.text),
      onChange,
      now: options.now ?? Date.now,
    };
    // Sign-up, sign-in e-mails and free tests draw on one set of buckets: one bound on what a flood can take.
    const limits = new RequestLimits();
    this.sessions = new Sessions(context, limits, options.onSignInMailError ?? (() => {}));
    this.keys = new Keys(context, limits, { networks, origin, endpoints });
    this.usage = new UsageReports(context);
    this.admin = new AccountAdmin(context);
    this.quotaMail =
      options.noticeIntervalMs === undefined
        ? undefined
        : new QuotaMail(context, options.noticeIntervalMs, options.onMailError ?? (() => {}));
  }
}
