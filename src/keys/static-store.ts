import { isDeepStrictEqual } from "node:util";
import type { GatewayConfig, RateSpec, StaticKey } from "../config/types.js";
import { keyHash } from "./digest.js";
import { checkedSettings, KeyRules } from "./key-settings.js";
import type { KeyStore, Principal } from "./types.js";

/** Keys from the deployment config or a test, held only as SHA-256 digests. */
export class StaticKeyStore implements KeyStore {
  readonly #byDigest = new Map<string, Principal>();

  constructor(keys: readonly StaticKey[], defaultRate: RateSpec) {
    for (const entry of keys) {
      const keyId = entry.key.slice(0, 8);
      this.#byDigest.set(keyHash(entry.key), {
        keyId,
        accountId: keyId,
        quotaScope: keyId,
        // as the loader checked them, and as an account key's are saved: lower case, no :443, empty lists dropped
        rules: KeyRules.of(entry.settings === undefined ? undefined : checkedSettings(entry.settings)),
        networks: entry.networks === "*" ? "*" : new Set(entry.networks),
        archive: entry.archive ?? true,
        plan: entry.plan ?? "shared",
        rate: entry.rate ?? defaultRate,
      });
    }
  }

  lookup(digest: string): Principal | undefined {
    // Looking up by digest leaks no timing about how much of a key matched.
    return this.#byDigest.get(digest);
  }
}

/**
 * The ids of the static keys a reload takes away or changes (networks, plan, rate, settings): their open
 * WebSocket connections were granted under the old entry, and end, as a revoked account key's do.
 */
export function changedStaticKeys(
  before: Pick<GatewayConfig, "keys" | "defaultRate">,
  after: Pick<GatewayConfig, "keys" | "defaultRate">,
): string[] {
  // what the entry grants, written one way: defaults filled in, networks in any order
  const granted = (config: typeof before, entry: StaticKey) => ({
    ...entry,
    networks: entry.networks === "*" ? "*" : [...new Set(entry.networks)].sort(),
    archive: entry.archive ?? true,
    plan: entry.plan ?? "shared",
    rate: entry.rate ?? config.defaultRate,
  });
  const next = new Map(after.keys.map((entry) => [entry.key, granted(after, entry)]));
  return before.keys
    .filter((entry) => !isDeepStrictEqual(next.get(entry.key), granted(before, entry)))
    .map((entry) => entry.key.slice(0, 8));
}
