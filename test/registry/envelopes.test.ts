import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  validateBitcoin,
  validateEither,
  validateNamed,
  validateNearcore,
  validatePositional,
} from "../../generated/envelopes.js";
import { ROOT } from "./helpers.js";

describe("envelope validators accept what the native node accepts", () => {
  it("positional (EVM, Substrate, CKB, Zilliqa): arrays, null or no params; every id form", () => {
    for (const params of [[], ["latest"], null, undefined]) {
      expect(validatePositional({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params })).toBe(true);
    }
    for (const id of [0, Number.MAX_SAFE_INTEGER, 1.5, "abc", null, { a: 1 }, undefined]) {
      expect(validatePositional({ jsonrpc: "2.0", id, method: "eth_blockNumber", params: [] })).toBe(true);
    }
    expect(validatePositional({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: {} })).toBe(false);
    expect(validatePositional({ jsonrpc: "1.0", id: 1, method: "eth_blockNumber", params: [] })).toBe(false);
    expect(validatePositional({ id: 1, method: "eth_blockNumber", params: [] })).toBe(false);
    expect(validatePositional({ jsonrpc: "2.0", id: [1], method: "eth_blockNumber" })).toBe(false);
    expect(validatePositional({ jsonrpc: "2.0", id: 1, method: 7 })).toBe(false);
    expect(validatePositional([{ jsonrpc: "2.0", id: 1, method: "x" }])).toBe(false);
  });

  it("nearcore: objects, legacy arrays (status [] included), null", () => {
    expect(validateNearcore({ jsonrpc: "2.0", id: "dontcare", method: "status", params: [] })).toBe(true);
    expect(
      validateNearcore({ jsonrpc: "2.0", id: "dontcare", method: "block", params: { finality: "final" } }),
    ).toBe(true);
    expect(validateNearcore({ jsonrpc: "2.0", id: "dontcare", method: "status", params: null })).toBe(true);
    expect(validateNearcore({ jsonrpc: "2.0", id: "dontcare", method: "status", params: "x" })).toBe(false);
  });

  it("named (Stellar RPC, toncenter): objects only", () => {
    expect(validateNamed({ jsonrpc: "2.0", id: 8, method: "getLatestLedger" })).toBe(true);
    expect(validateNamed({ jsonrpc: "2.0", id: 8, method: "getLatestLedger", params: {} })).toBe(true);
    expect(validateNamed({ jsonrpc: "2.0", id: 8, method: "getLatestLedger", params: [] })).toBe(false);
  });

  it("either (Starknet): positional or named", () => {
    expect(validateEither({ jsonrpc: "2.0", id: 1, method: "starknet_call", params: [] })).toBe(true);
    expect(validateEither({ jsonrpc: "2.0", id: 1, method: "starknet_call", params: {} })).toBe(true);
  });

  it("bitcoin: JSON-RPC 1.0 framing, no jsonrpc member, named params", () => {
    expect(validateBitcoin({ jsonrpc: "1.0", id: "curltest", method: "getblockcount", params: [] })).toBe(
      true,
    );
    expect(validateBitcoin({ id: "curltest", method: "getblockcount", params: [] })).toBe(true);
    expect(validateBitcoin({ jsonrpc: "2.0", id: 1, method: "getblockhash", params: { height: 1 } })).toBe(
      true,
    );
    expect(validateBitcoin({ jsonrpc: "3.0", id: 1, method: "getblockcount" })).toBe(false);
  });

  it("the generated validators (envelopes, deployment config) are self-contained: no import, no require (ajv#2509)", () => {
    const modules = readdirSync(join(ROOT, "generated")).filter((name) => name.endsWith(".js"));
    expect(modules.sort()).toEqual(["config-validator.js", "envelopes.js"]);
    for (const name of modules) {
      const source = readFileSync(join(ROOT, "generated", name), "utf8");
      expect(source, name).not.toMatch(/\brequire\s*\(/);
      expect(source, name).not.toMatch(/^\s*import\s/m);
    }
  });
});
