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

/** `FN` and a URL-safe body; anything else is refused before any lookup. */
export function looksLikeKey(segment: string | undefined): segment is string {
  return segment !== undefined && /^FN[A-Za-z0-9_-]{16,128}$/.test(segment);
}
