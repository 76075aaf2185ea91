import { randomBytes } from "node:crypto";
import { GatewayError } from "../../errors/table.js";
import { keyHash } from "../../keys/digest.js";
import { dashboardUrl } from "../endpoint-urls.js";
import type { ServiceContext } from "./context.js";
import { alreadySignedUpEmail, confirmationEmail, signInEmail } from "./emails.js";
import { emailOf } from "./input.js";
import type { RequestLimits } from "./request-limits.js";
import type { Account, TokenPurpose } from "./types.js";

/**
 * Sign-up and sign-in by e-mail, and the sessions they start. Every token (confirmation, sign-in, session)
 * is random and stored only as its hash.
 */
export class Sessions {
  readonly #context: ServiceContext;
  readonly #limits: RequestLimits;
  /** Told of a sign-up or sign-in e-mail that could not be made or sent: the caller was answered already. */
  readonly #onMailError: (error: Error) => void;

  constructor(context: ServiceContext, limits: RequestLimits, onMailError: (error: Error) => void) {
    this.#context = context;
    this.#limits = limits;
    this.#onMailError = onMailError;
  }

  /**
   * Creates a pending account and e-mails a confirmation token. The caller learns nothing about whether the
   * address had an account: the answer is the same, and only the e-mail differs. An address with an active
   * account gets a sign-in token, one still pending a new confirmation token.
   */
  async signUp(emailInput: unknown, ip: string): Promise<string> {
    const email = emailOf(emailInput);
    this.#limit(ip, email);
    const existing = await this.#context.store.accountByEmail(email);
    this.#afterAnswer(() => this.#signUpMail(email, existing));
    return email;
  }

  async #signUpMail(email: string, existing: Account | undefined): Promise<void> {
    const { store, config, now } = this.#context;
    if (existing?.status === "active") {
      const token = await this.#token(existing.id, "login", 1);
      await this.#context.mail(email, alreadySignedUpEmail(this.#publicUrl(), token));
      return;
    }
    const account = existing ?? (await store.createAccount(email, "pending", now()));
    if (account.status !== "pending") return;
    const token = await this.#token(account.id, "confirm", config.confirmTokenHours);
    await this.#context.mail(email, confirmationEmail(this.#publicUrl(), token, config.confirmTokenHours));
  }

  /**
   * Confirms the e-mail address: the account becomes active, and a session starts. A confirmation token
   * confirms a pending account only: one from an earlier sign-up, once another has confirmed the account,
   * is no sign-in link.
   */
  async confirm(tokenInput: unknown): Promise<{ account: Account; session: string }> {
    const { store, config } = this.#context;
    const account = await this.#redeem(tokenInput, "confirm");
    if (account.status !== "pending") throw new GatewayError("TOKEN_INVALID");
    await store.setAccountStatus(account.id, "active");
    await this.#context.onChange();
    const active = (await store.account(account.id)) as Account;
    return { account: active, session: await this.#token(active.id, "session", config.sessionHours) };
  }

  /**
   * E-mails a one-use sign-in token; answers the same whether the address has an account or not. An address
   * whose sign-up was never confirmed gets its confirmation again, as a sign-up would send it: the first
   * may have been lost, and a sign-in link could not start a session for it.
   */
  async requestLogin(emailInput: unknown, ip: string): Promise<void> {
    const email = emailOf(emailInput);
    this.#limit(ip, email);
    const account = await this.#context.store.accountByEmail(email);
    if (account?.status === "pending") this.#afterAnswer(() => this.#signUpMail(email, account));
    else if (account?.status === "active")
      this.#afterAnswer(async () => {
        const token = await this.#token(account.id, "login", 1);
        await this.#context.mail(email, signInEmail(this.#publicUrl(), token));
      });
  }

  /**
   * Makes and sends an e-mail once the caller has its answer. What it takes (a token written, a message
   * handed to the SMTP server: 100 ms and more) differs by whether the address has an account; done before
   * the answer, the answer's time told what its body does not.
   */
  #afterAnswer(mail: () => Promise<void>): void {
    setImmediate(() => {
      mail().catch((error: unknown) =>
        this.#onMailError(error instanceof Error ? error : new Error(String(error))),
      );
    });
  }

  /** Redeems a sign-in token for a session. */
  async start(tokenInput: unknown): Promise<{ account: Account; session: string }> {
    const account = active(await this.#redeem(tokenInput, "login"));
    return { account, session: await this.#token(account.id, "session", this.#context.config.sessionHours) };
  }

  /** Signs a session out: its token stops working at once. */
  async end(session: string | undefined): Promise<void> {
    if (session !== undefined && session !== "") await this.#context.store.dropToken(keyHash(session));
  }

  /** The active account a session token belongs to. */
  async authenticate(session: string | undefined): Promise<Account> {
    const { store, now } = this.#context;
    if (session === undefined || session === "") throw new GatewayError("SESSION_REQUIRED");
    const taken = await store.takeToken(keyHash(session), "session", now());
    if (taken === undefined || taken === "expired") throw new GatewayError("SESSION_REQUIRED");
    return active((await store.account(taken.accountId)) as Account);
  }

  /** Sign-up and sign-in draw on the same buckets: each sends an e-mail to an address the caller names. */
  #limit(ip: string, email: string): void {
    this.#limits.takeForAddress("signup-ip", ip, this.#context.config.signupRatePerIp);
    this.#limits.take(`signup-email:${email}`, this.#context.config.signupRatePerEmail);
  }

  async #redeem(tokenInput: unknown, purpose: "confirm" | "login"): Promise<Account> {
    const { store, now } = this.#context;
    if (typeof tokenInput !== "string" || tokenInput.length < 16 || tokenInput.length > 128)
      throw new GatewayError("TOKEN_INVALID");
    const taken = await store.takeToken(keyHash(tokenInput), purpose, now());
    if (taken === "expired") throw new GatewayError("TOKEN_EXPIRED");
    if (taken === undefined) throw new GatewayError("TOKEN_INVALID");
    return (await store.account(taken.accountId)) as Account;
  }

  async #token(accountId: number, purpose: TokenPurpose, hours: number): Promise<string> {
    const { store, now } = this.#context;
    const token = randomBytes(24).toString("base64url");
    await store.saveToken(keyHash(token), accountId, purpose, now() + hours * 3_600_000);
    return token;
  }

  /** Where the e-mails' links point. */
  #publicUrl(): string {
    return dashboardUrl(this.#context.config);
  }
}

function active(account: Account): Account {
  if (account.status !== "active")
    throw new GatewayError("ACCOUNT_NOT_ACTIVE", { accountStatus: account.status });
  return account;
}
