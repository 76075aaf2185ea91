import type { AccountsConfig, PlanSpec } from "../../config/types.js";
import type { Email } from "./emails.js";
import type { AccountStore } from "./types.js";

/** What every part of the account service (service.ts) works with. */
export interface ServiceContext {
  readonly store: AccountStore;
  readonly config: AccountsConfig;
  readonly plans: Readonly<Record<string, PlanSpec>>;
  /** Sends one of emails.ts's messages. */
  readonly mail: (to: string, email: Email) => Promise<void>;
  /**
   * Called after every change to an account or a key, and awaited before the answer: it refreshes the key
   * cache of a proxy in the same process, so a revoked key stops working there before the answer says so.
   * Other instances hear of it from the store's change feed.
   */
  readonly onChange: () => void | Promise<void>;
  readonly now: () => number;
}
