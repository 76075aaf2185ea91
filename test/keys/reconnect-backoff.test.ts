import { describe, expect, it } from "vitest";
import { RECONNECT_FIRST_MS, RECONNECT_MAX_MS, reconnectDelay } from "../../src/keys/reconnect-backoff.js";

// The wait between two tries of the listening connection bounds how late a change made after an outage
// reaches a proxy: it must stay well under the second docs/deployment.md promises, however long the outage.

describe("the listening connection's reconnect delay", () => {
  it("starts near RECONNECT_FIRST_MS and doubles up to RECONNECT_MAX_MS", () => {
    const highest = (attempt: number) => reconnectDelay(attempt, () => 1);
    expect(highest(0)).toBe(RECONNECT_FIRST_MS);
    expect(highest(1)).toBe(RECONNECT_FIRST_MS * 2);
    expect(highest(2)).toBe(RECONNECT_FIRST_MS * 4);
    expect(highest(3)).toBe(RECONNECT_MAX_MS);
  });

  it("never waits more than a few hundred ms, whatever the attempt, nor less than half its ceiling", () => {
    expect(RECONNECT_MAX_MS).toBeLessThanOrEqual(300);
    for (const attempt of [0, 5, 50, 1_000, Number.MAX_SAFE_INTEGER])
      for (const random of [0, 0.5, 0.999]) {
        const delay = reconnectDelay(attempt, () => random);
        expect(delay).toBeLessThanOrEqual(RECONNECT_MAX_MS);
        expect(delay).toBeGreaterThanOrEqual(RECONNECT_FIRST_MS / 2);
      }
    expect(reconnectDelay(1_000, () => 0)).toBe(RECONNECT_MAX_MS / 2);
  });
});
