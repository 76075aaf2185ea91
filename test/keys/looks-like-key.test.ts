import { describe, expect, it } from "vitest";
import { looksLikeKey } from "../../src/keys/types.js";
import { seeded } from "../support/random.js";

const RULE = /^FN[A-Za-z0-9_-]{16,128}$/;

describe("looksLikeKey", () => {
  it("takes FN and 16 to 128 URL-safe characters, and nothing else", () => {
    expect(looksLikeKey(`FN${"a".repeat(16)}`)).toBe(true);
    expect(looksLikeKey(`FN${"Z9_-".repeat(32)}`)).toBe(true);
    expect(looksLikeKey(`FN${"a".repeat(15)}`)).toBe(false);
    expect(looksLikeKey(`FN${"a".repeat(129)}`)).toBe(false);
    expect(looksLikeKey(`fn${"a".repeat(16)}`)).toBe(false);
    expect(looksLikeKey(`FN${"a".repeat(15)}.`)).toBe(false);
    expect(looksLikeKey(undefined)).toBe(false);
  });

  it("agrees with the rule's regular expression on generated segments", () => {
    // Characters at the edges of each range, and ones a caller might slip in.
    const alphabet = "FNaAzZ09_-`@[{/:.~%é\u0000 ";
    const { next } = seeded(11);
    for (let round = 0; round < 20_000; round++) {
      const length = next(140);
      let segment = next(4) === 0 ? "" : "FN";
      while (segment.length < length) segment += alphabet[next(next(3) === 0 ? alphabet.length : 8)];
      expect(looksLikeKey(segment), JSON.stringify(segment)).toBe(RULE.test(segment));
    }
  });
});
