import { GatewayError } from "../../errors/table.js";
import type { ServiceContext } from "./context.js";
import { emailOf } from "./input.js";
import type { Account } from "./types.js";

/** The operator's account commands (`node-gateway-admin accounts …`); customers sign up through `Sessions`. */
export class AccountAdmin {
  readonly #context: ServiceContext;

  constructor(context: ServiceContext) {
    this.#context = context;
  }

  /** An active account at once: the operator vouches for the address, so no e-mail confirms it. */
  async createAccount(emailInput: unknown): Promise<Account> {
    const { store, now } = this.#context;
    const email = emailOf(emailInput);
    if ((await store.accountByEmail(email)) !== undefined) throw new GatewayError("EMAIL_TAKEN");
    const account = await store.createAccount(email, "active", now());
    await this.#context.onChange();
    return account;
  }

  /** Suspends, reactivates or closes an account; closing is final. */
  async setStatus(accountId: number, status: Account["status"]): Promise<Account> {
    const { store } = this.#context;
    const account = await store.account(accountId);
    if (account === undefined)
      throw new GatewayError("INVALID_FIELD", { field: "account", reason: "no account has this id" });
    if (account.status === "closed")
      throw new GatewayError("ACCOUNT_NOT_ACTIVE", {
        accountStatus: "closed",
        reason: "a closed account stays closed",
      });
    await store.setAccountStatus(accountId, status);
    await this.#context.onChange();
    return (await store.account(accountId)) as Account;
  }
}
