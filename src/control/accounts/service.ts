import { randomBytes } from "node:crypto";
import type { AccountsConfig, RateSpec } from "../../config/types.js";
import { GatewayError } from "../../errors/table.js";
import { keyHash } from "../../keys/digest.js";
import { newApiKey } from "../../keys/issue.js";
import type { Plan } from "../../keys/types.js";
import { TokenBuckets } from "../../limits/token-bucket.js";
import type { Endpoint } from "../../registry/types.js";
import { type GatewayOrigin, keyEndpoints } from "../endpoint-urls.js";
import { confirmationEmail, type Email, type KeyOccasion, keyEmail, signInEmail } from "./emails.js";
import type { Mailer } from "./mailer.js";
import type { Account, AccountStore, KeyRecord, NewKey } from "./types.js";

/** Calls per day and network over a range, errors apart (GET /v1/keys/{id}/usage, GET /v1/usage). */
export interface UsageReport {
  readonly key?: { readonly id: number; readonly prefix: string };
  readonly from: string;
  readonly to: string;
  readonly days: readonly { day: string; label: string; calls: number; errors: number; key?: string }[];
  readonly total: { readonly calls: number; readonly errors: number };
}

function totalOf(rows: readonly { calls: number; errors: number }[]): { calls: number; errors: number } {
  return rows.reduce((sum, r) => ({ calls: sum.calls + r.calls, errors: sum.errors + r.errors }), {
    calls: 0,
    errors: 0,
  });
}

/** A day as YYYY-MM-DD, or INVALID_FIELD naming `field`. */
function dayOf(input: unknown, field: string): string {
  if (typeof input !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(input) || Number.isNaN(Date.parse(input)))
    throw new GatewayError("INVALID_FIELD", { field, reason: "a day as YYYY-MM-DD" });
  return input;
}

/** A key as its owner sees it in a listing: never the key itself. */
export interface KeyView {
  readonly id: number;
  readonly prefix: string;
  readonly plan: Plan;
  readonly networks: readonly string[] | "*";
  readonly archive: boolean;
  readonly status: "active" | "expired" | "revoked";
  readonly createdAt: string;
  readonly expiresAt: string | undefined;
  readonly replacedBy: number | undefined;
  /** Its own rate limit; undefined for the gateway's default (`defaultRate`). */
  readonly rate: KeyRecord["rate"];
}

export interface IssueOptions {
  readonly networks: readonly string[] | "*";
  readonly plan: Plan;
  readonly archive?: boolean;
  readonly expiresAt?: number;
  /** The key's own rate; the proxies' `defaultRate` without one. */
  readonly rate?: RateSpec;
}

const EMAIL =
  /^[^\s@<>(),;:"[\]\\]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
const PREFIX_LENGTH = 10;

/**
 * Accounts and keys: sign-up by e-mail, keys issued on an order or a free test and sent by e-mail,
 * rotation with a grace period, revocation. Every change is followed by `onChange`, awaited before the
 * answer: it refreshes the key cache of a proxy in the same process, so a revoked key stops working there
 * before the answer says so. Other instances hear of it from the store's change feed.
 */
export class AccountService {
  readonly #store: AccountStore;
  readonly #mailer: Mailer;
  readonly #config: AccountsConfig;
  readonly #networks: ReadonlySet<string>;
  readonly #origin: GatewayOrigin;
  readonly #endpoints: ReadonlyMap<string, Endpoint>;
  readonly #onChange: () => void | Promise<void>;
  readonly #now: () => number;
  readonly #buckets = new TokenBuckets(50_000);

  constructor(options: {
    store: AccountStore;
    mailer: Mailer;
    config: AccountsConfig;
    networks: ReadonlySet<string>;
    /** Where callers reach the gateway, and the registry's labels: the URLs a key e-mail lists. */
    origin: GatewayOrigin;
    endpoints: ReadonlyMap<string, Endpoint>;
    onChange: () => void | Promise<void>;
    now?: () => number;
  }) {
    this.#store = options.store;
    this.#mailer = options.mailer;
    this.#config = options.config;
    this.#networks = options.networks;
    this.#origin = options.origin;
    this.#endpoints = options.endpoints;
    this.#onChange = options.onChange;
    this.#now = options.now ?? Date.now;
  }

  /** Creates a pending account and e-mails a confirmation token. */
  async signUp(emailInput: unknown, ip: string): Promise<Account> {
    const email = this.#email(emailInput);
    this.#limit(`signup-ip:${ip}`, this.#config.signupRatePerIp);
    this.#limit(`signup-email:${email}`, this.#config.signupRatePerEmail);
    if ((await this.#store.accountByEmail(email)) !== undefined) throw new GatewayError("EMAIL_TAKEN");
    const account = await this.#store.createAccount(email, "pending", this.#now());
    const token = await this.#token(account.id, "confirm", this.#config.confirmTokenHours);
    await this.#send(email, confirmationEmail(this.#publicUrl(), token, this.#config.confirmTokenHours));
    return account;
  }

  /** Confirms the e-mail address: the account becomes active, and a session starts. */
  async confirm(tokenInput: unknown): Promise<{ account: Account; session: string }> {
    const account = await this.#redeem(tokenInput, "confirm");
    if (account.status === "pending") {
      await this.#store.setAccountStatus(account.id, "active");
      await this.#onChange();
    }
    const active = (await this.#store.account(account.id)) as Account;
    return { account: active, session: await this.#token(active.id, "session", this.#config.sessionHours) };
  }

  /** E-mails a one-use sign-in token; answers the same whether the address has an account or not. */
  async requestLogin(emailInput: unknown, ip: string): Promise<void> {
    const email = this.#email(emailInput);
    this.#limit(`signup-ip:${ip}`, this.#config.signupRatePerIp);
    this.#limit(`signup-email:${email}`, this.#config.signupRatePerEmail);
    const account = await this.#store.accountByEmail(email);
    if (account?.status !== "active") return;
    const token = await this.#token(account.id, "login", 1);
    await this.#send(email, signInEmail(this.#publicUrl(), token));
  }

  async startSession(tokenInput: unknown): Promise<{ account: Account; session: string }> {
    const account = this.#active(await this.#redeem(tokenInput, "login"));
    return { account, session: await this.#token(account.id, "session", this.#config.sessionHours) };
  }

  /** Signs a session out: its token stops working at once. */
  async endSession(session: string | undefined): Promise<void> {
    if (session !== undefined && session !== "") await this.#store.dropToken(keyHash(session));
  }

  /** The active account a session token belongs to. */
  async authenticate(session: string | undefined): Promise<Account> {
    if (session === undefined || session === "") throw new GatewayError("SESSION_REQUIRED");
    const taken = await this.#store.takeToken(keyHash(session), "session", this.#now());
    if (taken === undefined || taken === "expired") throw new GatewayError("SESSION_REQUIRED");
    return this.#active((await this.#store.account(taken.accountId)) as Account);
  }

  /** A free test: one per network, at most `maxPerEmail` per account, ending after `days`. */
  async requestFreeTest(account: Account, networkInput: unknown, ip: string): Promise<KeyView> {
    const network = this.#network(networkInput);
    this.#limit(`free-test-ip:${ip}`, this.#config.signupRatePerIp);
    const now = this.#now();
    const tests = (await this.#store.keys(account.id)).filter((k) => k.plan === "free-test");
    if (
      account.freeTestsUsed >= this.#config.freeTest.maxPerEmail ||
      tests.some((k) => k.networks !== "*" && k.networks.includes(network))
    ) {
      throw new GatewayError("FREE_TEST_LIMIT", { maxPerEmail: this.#config.freeTest.maxPerEmail });
    }
    await this.#store.countFreeTest(account.id);
    const expiresAt = now + this.#config.freeTest.days * 86_400_000;
    const { record, key } = await this.#issue(
      account.id,
      { networks: [network], plan: "free-test", archive: false, expiresAt },
      this.#config.freeTest.rate,
    );
    await this.#mailKey(account, key, record, { kind: "free-test", network });
    return this.#view(record);
  }

  /** Ordering a node issues a key for that network on the chosen plan. */
  async order(account: Account, networkInput: unknown, planInput: unknown): Promise<KeyView> {
    const network = this.#network(networkInput);
    const plan = planInput ?? "shared";
    if (plan !== "shared" && plan !== "dedicated")
      throw new GatewayError("INVALID_FIELD", { field: "plan", allowed: ["shared", "dedicated"] });
    const { record, key } = await this.#issue(account.id, { networks: [network], plan, archive: true });
    await this.#mailKey(account, key, record, { kind: "order", plan, network });
    return this.#view(record);
  }

  async listKeys(account: Account): Promise<KeyView[]> {
    return (await this.#store.keys(account.id)).map((k) => this.#view(k));
  }

  /** A new key with the same scopes, e-mailed; the old one keeps working for the grace period. */
  async rotate(account: Account, keyId: unknown): Promise<KeyView> {
    const { record, key, old, graceEnds } = await this.#rotate(account, keyId);
    await this.#mailKey(account, key, record, { kind: "rotation", oldPrefix: old.prefix, graceEnds });
    return this.#view(record);
  }

  /** Operator: rotates a key and returns the new one for the caller to show once. */
  async rotateKey(keyId: number): Promise<{ key: string; view: KeyView }> {
    const record = await this.#store.key(keyId);
    const account = record && (await this.#store.account(record.accountId));
    if (account === undefined) throw new GatewayError("KEY_NOT_FOUND");
    const { record: next, key } = await this.#rotate(account, keyId);
    return { key, view: this.#view(next) };
  }

  async #rotate(
    account: Account,
    keyId: unknown,
  ): Promise<{ record: KeyRecord; key: string; old: KeyRecord; graceEnds: number }> {
    const old = await this.#ownKey(account, keyId);
    if (this.#status(old) !== "active")
      throw new GatewayError("KEY_NOT_FOUND", { reason: "the key is no longer active" });
    const { record, key } = await this.#issue(
      account.id,
      {
        networks: old.networks,
        plan: old.plan,
        archive: old.archive,
        ...(old.expiresAt === undefined ? {} : { expiresAt: old.expiresAt }),
      },
      old.rate,
    );
    const graceEnds = this.#now() + this.#config.rotationGraceSeconds * 1000;
    await this.#store.retireKey(old.id, graceEnds, record.id);
    await this.#onChange();
    return { record, key, old, graceEnds };
  }

  /** Operator: revokes any key by id. */
  async revokeKey(keyId: number): Promise<KeyView> {
    const record = await this.#store.key(keyId);
    const account = record && (await this.#store.account(record.accountId));
    if (account === undefined) throw new GatewayError("KEY_NOT_FOUND");
    return await this.revoke(account, keyId);
  }

  async revoke(account: Account, keyId: unknown): Promise<KeyView> {
    const key = await this.#ownKey(account, keyId);
    if (key.status !== "revoked") {
      await this.#store.revokeKey(key.id, this.#now());
      await this.#onChange();
    }
    return this.#view((await this.#store.key(key.id)) as KeyRecord);
  }

  /** Operator: an account that needs no e-mail confirmation. */
  async createAccount(emailInput: unknown): Promise<Account> {
    const email = this.#email(emailInput);
    if ((await this.#store.accountByEmail(email)) !== undefined) throw new GatewayError("EMAIL_TAKEN");
    const account = await this.#store.createAccount(email, "active", this.#now());
    await this.#onChange();
    return account;
  }

  async setStatus(accountId: number, status: Account["status"]): Promise<Account> {
    const account = await this.#store.account(accountId);
    if (account === undefined) throw new GatewayError("INVALID_FIELD", { field: "account" });
    if (account.status === "closed")
      throw new GatewayError("ACCOUNT_NOT_ACTIVE", { reason: "a closed account stays closed" });
    await this.#store.setAccountStatus(accountId, status);
    await this.#onChange();
    return (await this.#store.account(accountId)) as Account;
  }

  /** Operator: issues a key and returns it; the caller shows it once. */
  async issueKey(accountId: number, options: IssueOptions): Promise<{ key: string; view: KeyView }> {
    const account = await this.#store.account(accountId);
    if (account === undefined) throw new GatewayError("INVALID_FIELD", { field: "account" });
    if (options.networks !== "*") for (const n of options.networks) this.#network(n);
    const { record, key } = await this.#issue(accountId, options, options.rate);
    return { key, view: this.#view(record) };
  }

  async #issue(
    accountId: number,
    options: IssueOptions,
    rate?: KeyRecord["rate"],
  ): Promise<{ record: KeyRecord; key: string }> {
    const key = newApiKey();
    const spec: NewKey = {
      accountId,
      keyHash: keyHash(key),
      prefix: key.slice(0, PREFIX_LENGTH),
      plan: options.plan,
      networks: options.networks,
      archive: options.archive ?? true,
      ...(rate === undefined ? {} : { rate }),
      ...(options.expiresAt === undefined ? {} : { expiresAt: options.expiresAt }),
    };
    const record = await this.#store.insertKey(spec, this.#now());
    await this.#onChange();
    return { record, key };
  }

  async #mailKey(account: Account, key: string, record: KeyRecord, occasion: KeyOccasion): Promise<void> {
    const endpoints = keyEndpoints(this.#origin, this.#endpoints, record, key);
    await this.#send(account.email, keyEmail(occasion, key, record, endpoints));
  }

  async #send(to: string, email: Email): Promise<void> {
    await this.#mailer.send(to, email.subject, email.text);
  }

  /**
   * A key's calls per day and network, errors apart, from `from` to `to` (YYYY-MM-DD, UTC, both included;
   * the last 30 days by default). Counts reach the store within the proxies' flush interval.
   */
  async keyUsage(account: Account, keyId: unknown, from: unknown, to: unknown): Promise<UsageReport> {
    const key = await this.#ownKey(account, keyId);
    const range = this.#range(from, to);
    const days = (await this.#store.usage([key.prefix], range.from, range.to)).map(
      ({ key: _, ...row }) => row,
    );
    return { key: { id: key.id, prefix: key.prefix }, ...range, days, total: totalOf(days) };
  }

  /** Every key of the account, the same way, each row naming its key's prefix. */
  async accountUsage(account: Account, from: unknown, to: unknown): Promise<UsageReport> {
    const range = this.#range(from, to);
    const keys = (await this.#store.keys(account.id)).map((k) => k.prefix);
    const days = await this.#store.usage(keys, range.from, range.to);
    return { ...range, days, total: totalOf(days) };
  }

  #range(fromInput: unknown, toInput: unknown): { from: string; to: string } {
    const today = new Date(this.#now()).toISOString().slice(0, 10);
    const to = fromInput === undefined && toInput === undefined ? today : dayOf(toInput ?? today, "to");
    const from =
      fromInput === undefined
        ? new Date(Date.parse(to) - 29 * 86_400_000).toISOString().slice(0, 10)
        : dayOf(fromInput, "from");
    if (from > to) throw new GatewayError("INVALID_FIELD", { field: "from", reason: "after to" });
    return { from, to };
  }

  async #ownKey(account: Account, keyId: unknown): Promise<KeyRecord> {
    const id = typeof keyId === "number" ? keyId : Number(keyId);
    const key = Number.isInteger(id) ? await this.#store.key(id) : undefined;
    // Someone else's key is "not found": its existence is not revealed.
    if (key === undefined || key.accountId !== account.id) throw new GatewayError("KEY_NOT_FOUND");
    return key;
  }

  #view(key: KeyRecord): KeyView {
    return {
      id: key.id,
      prefix: key.prefix,
      plan: key.plan,
      networks: key.networks,
      archive: key.archive,
      status: this.#status(key),
      createdAt: new Date(key.createdAt).toISOString(),
      expiresAt: key.expiresAt === undefined ? undefined : new Date(key.expiresAt).toISOString(),
      replacedBy: key.replacedBy,
      rate: key.rate,
    };
  }

  #status(key: KeyRecord): KeyView["status"] {
    if (key.status === "revoked") return "revoked";
    return key.expiresAt !== undefined && key.expiresAt <= this.#now() ? "expired" : "active";
  }

  async #redeem(tokenInput: unknown, purpose: "confirm" | "login"): Promise<Account> {
    if (typeof tokenInput !== "string" || tokenInput.length < 16 || tokenInput.length > 128)
      throw new GatewayError("TOKEN_INVALID");
    const taken = await this.#store.takeToken(keyHash(tokenInput), purpose, this.#now());
    if (taken === "expired") throw new GatewayError("TOKEN_EXPIRED");
    if (taken === undefined) throw new GatewayError("TOKEN_INVALID");
    return (await this.#store.account(taken.accountId)) as Account;
  }

  async #token(accountId: number, purpose: "confirm" | "login" | "session", hours: number): Promise<string> {
    const token = randomBytes(24).toString("base64url");
    await this.#store.saveToken(keyHash(token), accountId, purpose, this.#now() + hours * 3_600_000);
    return token;
  }

  #active(account: Account): Account {
    if (account.status !== "active") throw new GatewayError("ACCOUNT_NOT_ACTIVE", { status: account.status });
    return account;
  }

  #email(input: unknown): string {
    if (typeof input !== "string" || input.length > 254 || !EMAIL.test(input.trim()))
      throw new GatewayError("INVALID_EMAIL");
    return input.trim().toLowerCase();
  }

  #network(input: unknown): string {
    if (typeof input !== "string") throw new GatewayError("INVALID_FIELD", { field: "network" });
    if (!this.#networks.has(input)) throw new GatewayError("NETWORK_NOT_FOUND", { network: input });
    return input;
  }

  #limit(id: string, rate: AccountsConfig["signupRatePerIp"]): void {
    const decision = this.#buckets.take(id, rate);
    if (!decision.allowed) {
      throw new GatewayError(
        "RATE_LIMITED",
        { retryAfter: decision.retryAfter },
        { "retry-after": String(decision.retryAfter) },
      );
    }
  }

  #publicUrl(): string {
    return this.#config.publicUrl ?? `http://${this.#config.listen.host}:${this.#config.listen.port}`;
  }
}
