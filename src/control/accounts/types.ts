import type { RateSpec } from "../../config/types.js";
import type { KeyGrant } from "../../keys/grants.js";
import type { KeySettings } from "../../keys/key-settings.js";
import type { Plan } from "../../keys/types.js";
import type { UsageRow } from "../../keys/usage.js";
import type { CodeRow, MethodRow } from "../../keys/usage-detail.js";
import type { QuotaNotice } from "../../plans/quota-notices.js";

/**
 * Account states (docs/accounts.md has the table):
 * pending (e-mail not confirmed) → active → suspended ⇄ active; any → closed (final).
 * Only an active account's keys work.
 */
export type AccountStatus = "pending" | "active" | "suspended" | "closed";

/** Stored key states; `expired` is derived from expiresAt, so no job has to flip it on time. */
export type KeyStatus = "active" | "revoked";

export interface Account {
  readonly id: number;
  readonly email: string;
  readonly status: AccountStatus;
  readonly createdAt: number;
  readonly freeTestsUsed: number;
}

export interface KeyRecord {
  readonly id: number;
  readonly accountId: number;
  /** The key's first characters: shown in listings and logs, never enough to use it. */
  readonly prefix: string;
  readonly plan: Plan;
  /** Network codes, or "*" for all. */
  readonly networks: readonly string[] | "*";
  readonly archive: boolean;
  readonly rate: RateSpec | undefined;
  readonly status: KeyStatus;
  readonly createdAt: number;
  readonly expiresAt: number | undefined;
  /** Set on a rotated key: the key that replaced it. */
  readonly replacedBy: number | undefined;
  /** What its owner restricted it to (keys/key-settings.ts); `{}` for nothing. */
  readonly settings: KeySettings;
  /** Whose quota the key spends: its own prefix, or for a rotated key the first key's of its line. */
  readonly quotaPrefix: string;
}

export interface NewKey {
  readonly accountId: number;
  readonly keyHash: string;
  readonly prefix: string;
  readonly plan: Plan;
  readonly networks: readonly string[] | "*";
  readonly archive: boolean;
  readonly rate?: RateSpec;
  readonly expiresAt?: number;
  /** A rotated key's: what its owner restricted the key it replaces to. */
  readonly settings?: KeySettings;
  /** A rotated key's: the prefix whose quota it spends (KeyRecord.quotaPrefix of the key it replaces). */
  readonly quotaPrefix?: string;
}

/**
 * What a new key's issue checks and does in the insert's own transaction, which holds the account's row
 * (PostgreSQL: SELECT … FOR UPDATE; SQLite: an IMMEDIATE transaction): concurrent issues for one account
 * take turns, so a plan's maxKeys, a free test per network and a key's one successor hold under a burst.
 */
export interface IssueTerms {
  /** Throws (a GatewayError) to refuse the key, judging the account and its keys as the transaction reads them. */
  readonly check: (account: Account, keys: readonly KeyRecord[]) => void;
  /** A free test: counted against the account's allowance. */
  readonly freeTest?: boolean;
  /** A rotation: the key the new one replaces, limited to `expiresAt` (or its own expiry) and linked to it. */
  readonly replaces?: { readonly id: number; readonly expiresAt: number };
}

export type TokenPurpose = "confirm" | "login" | "session";

/**
 * What `insertKey` throws when another key already has the new key's prefix: the prefix names a key's
 * quota and usage, so it is unique (a unique index in both stores), and the caller draws another key.
 */
export class PrefixTaken extends Error {
  constructor(prefix: string) {
    super(`another key has the prefix ${prefix}`);
    this.name = "PrefixTaken";
  }
}

/** A quota crossing to mail (plans/quota-notices.ts), as the store holds it. */
export interface PendingNotice extends QuotaNotice {
  readonly email: string;
}

/**
 * Where accounts and keys live, as the control plane writes them. SQLite is the embedded default. The
 * proxy never sees this interface: it reads the same store's grants through keys/grants.ts's GrantFeed.
 */
export interface AccountStore {
  createAccount(email: string, status: AccountStatus, now: number): Promise<Account>;
  accountByEmail(email: string): Promise<Account | undefined>;
  account(id: number): Promise<Account | undefined>;
  listAccounts(): Promise<Account[]>;
  setAccountStatus(id: number, status: AccountStatus): Promise<void>;

  saveToken(tokenHash: string, accountId: number, purpose: TokenPurpose, expiresAt: number): Promise<void>;
  /** Forgets a token: a session that signed out. */
  dropToken(tokenHash: string): Promise<void>;
  /** Marks a one-use token used and returns it; session tokens are not consumed. */
  takeToken(
    tokenHash: string,
    purpose: TokenPurpose,
    now: number,
  ): Promise<{ accountId: number } | "expired" | undefined>;

  /** Stores a new key, on `terms` if any (in one transaction); PrefixTaken when another key has its prefix. */
  insertKey(key: NewKey, now: number, terms?: IssueTerms): Promise<KeyRecord>;
  keys(accountId: number): Promise<KeyRecord[]>;
  key(id: number): Promise<KeyRecord | undefined>;
  revokeKey(id: number, now: number): Promise<void>;
  /** Replaces a key's settings; `{}` clears them. Proxies hear of it as of a revocation. */
  setKeySettings(id: number, settings: KeySettings): Promise<void>;

  /** The usage rows of these keys (by prefix) from day `from` to day `to` (YYYY-MM-DD, both included). */
  usage(prefixes: readonly string[], from: string, to: string): Promise<UsageRow[]>;

  /** The per-method rows of these keys over the days, summed over the days (keys/usage-detail.ts). */
  usageMethods(prefixes: readonly string[], from: string, to: string): Promise<MethodRow[]>;
  /** The per-code rows of these keys over the days, summed over the days. */
  usageCodes(prefixes: readonly string[], from: string, to: string): Promise<CodeRow[]>;

  /** Quota notices the proxies wrote and no control plane has mailed yet, with their account's e-mail. */
  unsentNotices(): Promise<PendingNotice[]>;
  /** Marks a notice sent; false when another control plane did first (then it is not mailed again). */
  markNoticeSent(notice: PendingNotice, now: number): Promise<boolean>;
  /** A notice the mailer failed to send: unsent again, for the next round. */
  unmarkNotice(notice: PendingNotice): Promise<void>;

  /** Every key whose grant changed after `revision` (new, revoked, rotated, account status). */
  changesSince(
    revision: number,
  ): Promise<{ readonly revision: number; readonly grants: readonly KeyGrant[] }>;
  close(): Promise<void>;
}
