import type { RateSpec } from "../config/types.js";
import type { KeyRules } from "./key-settings.js";

/** A plan's name, as the deployment config's `plans` defines it (docs/plans.md). */
export type Plan = string;

/** Who a key belongs to and what it may reach: the data plane's whole view of an account. */
export interface Principal {
  /** A short, non-secret identifier of the key (its visible prefix), safe for logs and metrics. */
  readonly keyId: string;
  /** Network codes the key may use, or "*" for all. */
  readonly networks: ReadonlySet<string> | "*";
  /** Whether `<code>-archive` labels are included. */
  readonly archive: boolean;
  readonly plan: Plan;
  readonly rate: RateSpec;
  /**
   * Who a plan's quota counts against when it is per account: `account:<id>`; the key's id for a key
   * without an account (the deployment config's).
   */
  readonly accountId: string;
  /**
   * Who a plan's quota counts against when it is per key: the key's id, or for a key that replaced another
   * by rotation the first key's of its line, so that rotating does not bring a fresh allowance.
   */
  readonly quotaScope: string;
  /** What the key's owner restricted it to (keys/key-settings.ts); undefined when nothing. */
  readonly rules: KeyRules | undefined;
}

/**
 * Key digest (keyHash) in, principal out. Lookups are synchronous: a store keeps its keys (or a cache of
 * them) in memory, so the hot path never waits on disk or network. The caller hashes once for all stores.
 */
export interface KeyStore {
  lookup(digest: string): Principal | undefined;
}

/** What every API key starts with: the one place the prefix is written. */
export const KEY_PREFIX = "FN";

/** A key as a pattern: the prefix and 16 to 128 URL-safe characters. */
export const KEY_PATTERN = `${KEY_PREFIX}[A-Za-z0-9_-]{16,128}`;

/**
 * The prefix and 16 to 128 URL-safe characters (KEY_PATTERN); anything else is refused before any
 * lookup. A loop over character codes: this runs once per request, and the regular expression's entry
 * and exit showed in its profile (docs/performance.md).
 */
export function looksLikeKey(segment: string | undefined): segment is string {
  if (segment === undefined || segment.length < 18 || segment.length > 130) return false;
  if (!segment.startsWith(KEY_PREFIX)) return false;
  for (let i = KEY_PREFIX.length; i < segment.length; i++)
    if (!isKeyChar(segment.charCodeAt(i))) return false;
  return true;
}

const ANY_KEY = new RegExp(KEY_PATTERN, "g");

/**
 * A key's shape where a word starts: at the text's start or after a character that is not a letter or
 * digit (`apikey=FN…`, `app-FN…-42`). Not inside a word: a base58 or base32 address
 * holds `FN` and 16 more such characters often enough that a caller's own text would be taken for a key.
 */
const KEY_AT_WORD = new RegExp(`(?:^|[^A-Za-z0-9])${KEY_PATTERN}`);

/** Whether `text` holds something shaped like a key where a word starts (KEY_AT_WORD). */
export function holdsKeyShape(text: string): boolean {
  return text.includes(KEY_PREFIX) && KEY_AT_WORD.test(text);
}

/** `text` with anything shaped like a key replaced by the prefix and `…`: for text the gateway did not write. */
export function withoutKeys(text: string): string {
  return text.replace(ANY_KEY, `${KEY_PREFIX}…`);
}

function isKeyChar(c: number): boolean {
  return (
    (c >= 97 && c <= 122) ||
    (c >= 65 && c <= 90) ||
    (c >= 48 && c <= 57) ||
    c === 95 /* _ */ ||
    c === 45 /* - */
  );
}
