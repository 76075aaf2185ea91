import { describe, expect, it } from "vitest";
import { AnswerCache, FINAL } from "../../src/cache/answer-cache.js";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";

// The largest entry (`maxEntryBytes`, docs/cache.md) is the answer's own size: an answer under it is kept,
// though what it counts against the byte budget (1.5 times its bytes, its key and some) is more; a reload
// that lowers it carries over only the answers within it.

describe("the cache's largest entry", () => {
  const settings = { ...DEFAULT_CACHE, enabled: true, followsBlocks: true };
  const entry = (bytes: number) => ({
    before: Buffer.alloc(bytes),
    after: Buffer.alloc(0),
    epoch: FINAL,
    expiresAt: Number.POSITIVE_INFINITY,
    tier: undefined,
  });

  it("keeps an answer up to maxEntryBytes, and none larger", () => {
    const cache = new AnswerCache(settings);
    const max = settings.maxEntryBytes;
    cache.set("under", entry(Math.floor(max * 0.7)));
    cache.set("at", entry(max));
    cache.set("over", entry(max + 1));
    expect(cache.get("under", 0, false)).toBeDefined();
    expect(cache.get("at", 0, false)).toBeDefined();
    expect(cache.get("over", 0, false)).toBeUndefined();
  });

  it("a reload that lowers it carries no answer larger over into the new cache", () => {
    const old = new AnswerCache(settings);
    old.set("big", entry(100_000));
    old.set("small", entry(1_000));
    const next = new AnswerCache({ ...settings, maxEntryBytes: 10_000 });
    next.carryFrom(old);
    expect(next.get("big", 0, false)).toBeUndefined();
    expect(next.get("small", 0, false)).toBeDefined();
  });
});
