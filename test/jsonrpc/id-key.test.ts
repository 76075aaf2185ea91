import { describe, expect, it } from "vitest";
import { idKey } from "../../src/jsonrpc/id-key.js";

// A JSON-RPC id by its value: what a node that writes ids back by value (reth, anvil) answers with.
describe("idKey", () => {
  it("is one key for one value, however it is written", () => {
    expect(idKey('"a"')).toBe(idKey('"\\u0061"'));
    expect(new Set(["0", "-0", "0.0", "0e5"].map(idKey)).size).toBe(1);
    expect(idKey("1.0")).toBe(idKey("1"));
    expect(idKey('"a"')).not.toBe(idKey('"A"'));
    expect(idKey("1")).not.toBe(idKey('"1"'));
    expect(idKey(undefined)).toBe(idKey("null"));
  });

  it("keeps a plain string or an integer as it is, past 2^53 too: two such ids are never one", () => {
    for (const plain of ['"abc"', '"é"', "0", "42", "-7", "9007199254740993"])
      expect(idKey(plain)).toBe(plain);
    expect(idKey("9007199254740993")).not.toBe(idKey("9007199254740992"));
  });
});
