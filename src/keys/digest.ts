import { hash } from "node:crypto";
import type { KeyStore, Principal } from "./types.js";

/**
 * How keys and tokens are stored and looked up: SHA-256, base64url. Looking up by digest leaks no timing
 * about how much of a secret matched, and a database dump holds no usable key. The one-shot `hash` runs
 * once per request and costs a third of createHash().update().digest().
 */
export function keyHash(secret: string): string {
  return hash("sha256", secret, "base64url");
}

/**
 * Looks keys up by digest, remembering the digest of each key a store knew: the data plane sees the same
 * few keys over and over, and a SHA-256 costs about ten Map lookups. Only keys that resolved are kept, so
 * guessed keys cannot fill the memo or push a real one out; past `size` entries it starts over. A key
 * withdrawn later still maps to its digest, which its store then no longer knows. The cost: the keys in
 * use stay in this process's memory, as each request's URL already keeps its own for its lifetime.
 */
export class KeyLookup {
  readonly #digests = new Map<string, string>();
  readonly #store: KeyStore;
  readonly #size: number;

  constructor(store: KeyStore, size = 4096) {
    this.#store = store;
    this.#size = size;
  }

  principal(key: string): Principal | undefined {
    const known = this.#digests.get(key);
    if (known !== undefined) return this.#store.lookup(known);
    const digest = keyHash(key);
    const principal = this.#store.lookup(digest);
    if (principal === undefined) return undefined;
    if (this.#digests.size >= this.#size) this.#digests.clear();
    // A copy: the key is a slice of the request's URL, which would otherwise stay alive with it.
    this.#digests.set(Buffer.from(key, "latin1").toString("latin1"), digest);
    return principal;
  }
}
