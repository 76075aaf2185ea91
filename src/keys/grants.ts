import type { RateSpec } from "../config/types.js";
import type { KeySettings } from "./key-settings.js";
import type { Plan } from "./types.js";

/**
 * A key as the proxy needs it: its digest, what it may reach, and whether it and its account are in
 * force. The control plane writes keys; the proxy reads grants, and nothing else, from the account store.
 */
export interface KeyGrant {
  readonly id: number;
  readonly accountId: number;
  readonly keyHash: string;
  /** The key's first characters: its id in logs, never enough to use it. */
  readonly prefix: string;
  readonly plan: Plan;
  /** Network codes, or "*" for all. */
  readonly networks: readonly string[] | "*";
  readonly archive: boolean;
  readonly rate: RateSpec | undefined;
  readonly status: "active" | "revoked";
  readonly expiresAt: number | undefined;
  readonly accountStatus: "pending" | "active" | "suspended" | "closed";
  readonly revision: number;
  /** The owner's restrictions (keys/key-settings.ts); undefined when none. */
  readonly settings: KeySettings | undefined;
  /** Whose quota the key spends: its prefix, or a rotated key's first predecessor's (Principal.quotaScope). */
  readonly quotaScope: string;
}

/**
 * The proxy's one dependency on the control plane: the account store's grants and its change feed. Every
 * change to a key or its account bumps the store's revision, so a reader asks for what changed since
 * the revision it last saw.
 */
export interface GrantFeed {
  /** Every grant that changed after `revision`, with the store's current revision. */
  changesSince(
    revision: number,
  ): Promise<{ readonly revision: number; readonly grants: readonly KeyGrant[] }>;
  /**
   * Calls `listener` whenever the store may have changed, and `status` when the feed loses or regains the
   * store; once it has regained it, it calls `listener` too (changes made meanwhile were not announced to
   * it). Returns a function that stops it.
   */
  watch(listener: () => void, status?: (change: GrantStatus) => void): () => void;
  close(): Promise<void>;
}

/** Whether the feed reaches its store; `reason` says why not. */
export interface GrantStatus {
  readonly reachable: boolean;
  readonly reason?: string;
}
