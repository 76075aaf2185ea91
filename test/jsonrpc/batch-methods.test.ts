import { describe, expect, it } from "vitest";
import { batchMethods } from "../../src/jsonrpc/batch-methods.js";
import type { Checked } from "../../src/jsonrpc/check.js";

// A batch's calls as its access line names them: methods with their counts, refusals as one count.
const passed = (method: string) => ({ ok: true, method }) as unknown as Checked;
const refused = { ok: false } as unknown as Checked;

describe("batchMethods", () => {
  it("names each method once, with its count when more than one, in the order first seen", () => {
    const calls = ["eth_call", "eth_getBalance", "eth_call", "eth_call"].map(passed);
    expect(batchMethods(calls)).toBe("eth_call×3 eth_getBalance");
  });

  it("counts refused calls as one entry", () => {
    expect(batchMethods([passed("eth_chainId"), refused])).toBe("eth_chainId refused");
    expect(batchMethods([refused, refused])).toBe("refused×2");
  });

  it("names at most ten methods and sums the rest", () => {
    const calls = Array.from({ length: 12 }, (_, i) => passed(`m${i}`));
    expect(batchMethods([...calls, refused])).toBe("m0 m1 m2 m3 m4 m5 m6 m7 m8 m9 +2 more refused");
  });
});
