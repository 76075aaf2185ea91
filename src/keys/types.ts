import type { RateSpec } from "../config/types.js";

export type Plan = "free-test" | "shared" | "dedicated";

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
}

/**
 * Key digest (keyHash) in, principal out. Lookups are synchronous: a store keeps its keys (or a cache of
 * them) in memory, so the hot path never waits on disk or network. The caller hashes once for all stores.
 */
export interface KeyStore {
  lookup(digest: string): Principal | undefined;
}

/**
 * `FN` and 16 to 128 URL-safe characters (`^FN[A-Za-z0-9_-]{16,128}$`); anything else is refused before
 * any lookup. A loop over character codes: this runs once per request, and the regular expression's
 * entry and exit showed in its profile (docs/performance.md).
 */
export function looksLikeKey(segment: string | undefined): segment is string {
  if (segment === undefined || segment.length < 18 || segment.length > 130) return false;
  if (segment.charCodeAt(0) !== 70 /* F */ || segment.charCodeAt(1) !== 78 /* N */) return false;
  for (let i = 2; i < segment.length; i++) if (!isKeyChar(segment.charCodeAt(i))) return false;
  return true;
}

/** `text` with anything shaped like a key replaced by `FN…`: for text the gateway did not write itself. */
export function withoutKeys(text: string): string {
  return text.replace(/FN[A-Za-z0-9_-]{16,128}/g, "FN…");
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
