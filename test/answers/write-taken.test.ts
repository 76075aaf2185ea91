import { describe, expect, it } from "vitest";
import { writeTaken } from "../../src/answers/write-taken.js";

// Whether a node took a write, from its answer (answers/write-taken.ts): a write it refused changed nothing,
// and ends no caller's answers at the head.

const answer = (value: unknown) => Buffer.from(JSON.stringify(value));

describe("whether a node took a write", () => {
  it("reads a single call's answer: a result is taken, an error is not, a JSON-RPC 1.0 null error is no error", () => {
    expect(writeTaken(200, answer({ jsonrpc: "2.0", id: 1, result: "0xab" }))).toBe(true);
    expect(
      writeTaken(200, answer({ jsonrpc: "2.0", id: 1, error: { code: -32000, message: "nonce too low" } })),
    ).toBe(false);
    expect(writeTaken(200, Buffer.from('{"result":"ab","error": null,"id":1}'))).toBe(true);
    expect(writeTaken(500, answer({ result: null, error: { code: -26 }, id: 1 }))).toBe(false);
  });

  it("reads a batch's answers to its writes alone, and a refusal of the whole batch as a refusal", () => {
    const batch = [
      { jsonrpc: "2.0", id: 1, error: { code: -32602, message: "Failed to decode transaction" } },
      { jsonrpc: "2.0", id: 2, result: "0x1" },
    ];
    expect(writeTaken(200, answer(batch), ["1"])).toBe(false);
    expect(writeTaken(200, answer(batch), ["2"])).toBe(true);
    // anvil's answer to a batch holding an id it cannot read (1.5): one error, "id": null
    expect(writeTaken(200, answer({ jsonrpc: "2.0", id: null, error: { code: -32600 } }), ["1.5"])).toBe(
      false,
    );
    // a write sent as a notification is answered with nothing
    expect(writeTaken(200, Buffer.from(""), [])).toBe(true);
  });
});
