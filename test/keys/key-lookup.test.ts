import { describe, expect, it } from "vitest";
import { KeyLookup, keyHash } from "../../src/keys/digest.js";
import type { KeyStore, Principal } from "../../src/keys/types.js";

const principal = (keyId: string): Principal => ({
  keyId,
  quotaScope: keyId,
  networks: "*",
  archive: false,
  plan: "shared",
  rate: { perSecond: 10, burst: 10 },
  accountId: keyId,
  rules: undefined,
});

/** A store keyed by digest, recording what it was asked. */
function storeOf(
  keys: Record<string, Principal>,
): KeyStore & { asked: string[]; byDigest: Map<string, Principal> } {
  const byDigest = new Map(Object.entries(keys).map(([key, p]) => [keyHash(key), p]));
  const asked: string[] = [];
  return {
    asked,
    byDigest,
    lookup(digest) {
      asked.push(digest);
      return byDigest.get(digest);
    },
  };
}

describe("key lookup", () => {
  const a = `FN${"a".repeat(20)}`;
  const b = `FN${"b".repeat(20)}`;
  const c = `FN${"c".repeat(20)}`;

  it("asks the store by digest every time, so a withdrawn key stops working at once", () => {
    const store = storeOf({ [a]: principal("a") });
    const lookup = new KeyLookup(store);
    expect(lookup.principal(a)?.keyId).toBe("a");
    expect(lookup.principal(a)?.keyId).toBe("a");
    expect(store.asked).toEqual([keyHash(a), keyHash(a)]);
    store.byDigest.clear();
    expect(lookup.principal(a)).toBeUndefined();
  });

  it("answers the same past its size, for known and unknown keys alike", () => {
    const store = storeOf({ [a]: principal("a"), [b]: principal("b") });
    const lookup = new KeyLookup(store, 1);
    for (let round = 0; round < 3; round++) {
      expect(lookup.principal(a)?.keyId).toBe("a");
      expect(lookup.principal(b)?.keyId).toBe("b");
      expect(lookup.principal(c)).toBeUndefined();
    }
    expect(store.asked.at(-1)).toBe(keyHash(c));
  });
});
