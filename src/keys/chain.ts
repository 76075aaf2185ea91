import type { KeyStore, Principal } from "./types.js";

/** Asks each store in turn: config keys first, then the account store's cache. */
export class KeyStoreChain implements KeyStore {
  readonly #stores: readonly KeyStore[];

  constructor(stores: readonly KeyStore[]) {
    this.#stores = stores;
  }

  lookup(digest: string): Principal | undefined {
    for (const store of this.#stores) {
      const principal = store.lookup(digest);
      if (principal !== undefined) return principal;
    }
    return undefined;
  }
}
