import { describe, expect, it } from "vitest";
import { idKey, isPlainId, isUnreadableId } from "../../src/jsonrpc/id-key.js";

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

// What anvil (checked by hand: -1 and "a\"b" come back by their own ids, 1.5 and a 23-digit id as null)
// and reth, which read ids as strings or u64, cannot read: a null-id error over a WebSocket is only theirs.
describe("ids a node may not read", () => {
  it("unreadable: a fraction, an exponent, an integer past u64", () => {
    for (const id of ["1.5", "1e3", "123456789012345678901234", "18446744073709551616"])
      expect(isUnreadableId(id)).toBe(true);
    for (const id of ["1", "-1", "18446744073709551615", '"a"', '"a\\"b"', '"1.5"', "null"])
      expect(isUnreadableId(id)).toBe(false);
  });

  it("plain, which may lead identical calls: a string without escapes, an integer of up to 15 digits", () => {
    for (const id of ["0", "42", '"x"', "999999999999999"]) expect(isPlainId(id)).toBe(true);
    for (const id of ["-1", "1.5", "1234567890123456", '"a\\"b"', "null"]) expect(isPlainId(id)).toBe(false);
  });
});
