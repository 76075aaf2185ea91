import { describe, expect, it } from "vitest";
import type { GatewayError } from "../../src/errors/table.js";
import { readPlainBody } from "../../src/jsonrpc/plain-call.js";
import { type ParsedBody, parseAnyJsonRpcBody, parseJsonRpcBody } from "../../src/jsonrpc/scan.js";
import { seeded } from "../support/random.js";

const DEPTH = 64;

/** The general path's reading of a body, or the code it refuses it with. */
function general(text: string): ParsedBody | string {
  try {
    return parseAnyJsonRpcBody(text, DEPTH);
  } catch (error) {
    return (error as GatewayError).code;
  }
}

/** A body the plain reader accepts must read exactly as the general path (and JSON.parse) reads it. */
function expectSameAsGeneral(text: string): boolean {
  const plain = readPlainBody(text, DEPTH);
  if (plain === undefined) return false;
  const expected = general(text);
  expect(expected, text).not.toBeTypeOf("string");
  const { batch, calls } = expected as ParsedBody;
  const parsed: unknown = JSON.parse(text);
  expect(plain.batch, text).toBe(batch);
  expect(plain.calls.length, text).toBe(calls.length);
  plain.calls.forEach((call, i) => {
    const fromJson = (batch ? (parsed as unknown[])[i] : parsed) as object;
    expect(call.value, text).toStrictEqual(calls[i]?.value);
    expect(call.value, text).toStrictEqual(fromJson);
    expect(Object.keys(call.value as object), text).toEqual(Object.keys(fromJson));
    expect([...call.members], text).toEqual([...(calls[i]?.members ?? [])]);
  });
  return true;
}

describe("plain body reader", () => {
  it("reads the calls most traffic is, as the general path does", () => {
    const common = [
      '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
      '{"jsonrpc":"2.0","id":7,"method":"eth_getBalance","params":["0x00000000219ab540356cBB839Cbe05303d7705Fa","latest"]}',
      '{"jsonrpc":"2.0","method":"eth_getBlockByNumber","params":["0x1b4",true],"id":"a-b"}',
      '{"id":12345678901234567890,"jsonrpc":"2.0","method":"chain_getBlockHash","params":[123]}',
      '{ "jsonrpc" : "2.0" , "id" : null , "method" : "system_health" }',
      '{"jsonrpc":"2.0","id":-1.5e+3,"method":"m","params":null}',
      '{"jsonrpc":"2.0","id":0,"method":"getblockcount","params":[false, -0, 1E2, "é ☃"]}',
      '[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}]',
      '[ {"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]} , {"jsonrpc":"2.0","id":2,"method":"net_version"} ]',
    ];
    for (const text of common) expect(expectSameAsGeneral(text), text).toBe(true);
  });

  it("leaves to the general path what it does not read, and the general path still decides", () => {
    const others = [
      "[]",
      "[1]",
      '[{"jsonrpc":"2.0","id":1,"method":"a"},]',
      '[{"jsonrpc":"2.0","id":1,"method":"a"} {"id":2}]',
      '[{"jsonrpc":"2.0","id":1,"method":"a"},{"method":"eth_call","params":[{"to":"0x1"}]}]',
      '{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x1"},"latest"]}',
      '{"jsonrpc":"2.0","id":{"x":1},"method":"a"}',
      '{"jsonrpc":"2.0","method":"a","extra":1}',
      '{"\\u006dethod":"a"}',
      '{"method":"a\\"b"}',
      // Escapes and control characters whose strings still end at the next quote: only the final check stops them.
      '{"method":"a\\\\"}',
      '{"method":"\\u0041"}',
      '{"method":"tab\there"}',
      '{"method":"a","method":"b"}',
      '{"jsonrpc":"2.0",\n"method":"a"}',
      '{"method":"a"}\n',
      "{}",
      '{"id":01}',
      '{"params":[1,]}',
    ];
    for (const text of others) expect(readPlainBody(text, DEPTH), text).toBeUndefined();
    expect(general('{"method":"a","method":"b"}')).toBe("DUPLICATE_MEMBER");
    expect(general('{"id":01}')).toBe("PARSE_ERROR");
    expect(general("[]")).toMatchObject({ batch: true, calls: [] });
    expect(parseJsonRpcBody('{"method":"a"}\n', DEPTH).calls[0]?.value).toEqual({ method: "a" });
  });

  it("keeps the depth limit: params need two levels, three in a batch", () => {
    expect(readPlainBody('{"id":1}', 1)).toBeUndefined();
    expect(readPlainBody('[{"id":1}]', 2)).toBeUndefined();
    expect(readPlainBody('[{"id":1}]', 3)).toBeDefined();
    expect(() => parseJsonRpcBody('{"method":"a","params":[]}', 1)).toThrow(
      expect.objectContaining({ code: "NESTING_TOO_DEEP" }),
    );
    expect(() => parseJsonRpcBody('[{"method":"a","params":[]}]', 2)).toThrow(
      expect.objectContaining({ code: "NESTING_TOO_DEEP" }),
    );
  });

  it("accepts nothing JSON.parse refuses, and reads what it accepts as JSON.parse does (generated near-misses)", () => {
    const names = ["jsonrpc", "id", "method", "params", "ID", "method2", "\\u0069d", ""];
    const values = [
      '"2.0"',
      '"eth_chainId"',
      "1",
      "-0",
      "0",
      "01",
      "1.",
      "1.5e3",
      "1e",
      "-",
      "+1",
      ".5",
      "0x10",
      "1E+2",
      "2e-3",
      "true",
      "tru",
      "false",
      "null",
      "nul",
      "NaN",
      '"a\\"b"',
      '"a\\\\"',
      '"\\u0041"',
      '"tab\t"',
      '"é☃"',
      '"\u2028"',
      '""',
      "[]",
      "[ ]",
      "[1,]",
      '[1,"x",true,null]',
      "[[1]]",
      '[{"a":1}]',
      "{}",
      '{"a":1}',
      "[1 2]",
      '["a",]',
      '"unterminated',
    ];
    const plainValues = ['"2.0"', "1", '"eth_chainId"', "null", "-0", "[]", '["0x1",true, 2]', "1.5e3"];
    const noise = ['"', "{", "}", "[", "]", ",", ":", " ", "\n", "\\", "0", "e", "-", ".", "x", "\u0000"];
    const { next, pick } = seeded(11);
    const space = () => (next(4) === 0 ? " " : "");
    // Mostly the envelope's names, each once, so that many bodies are ones the reader should take.
    const object = () => {
      const chosen =
        next(4) === 0
          ? Array.from({ length: next(5) }, () => pick(names))
          : names.slice(0, 4).filter(() => next(3) > 0);
      const members = chosen.map(
        (name) =>
          `${space()}"${name}"${space()}:${space()}${pick(next(2) === 0 ? values : plainValues)}${space()}`,
      );
      return `${space()}{${members.join(",")}}${space()}`;
    };
    const separators = [",", ",", ",", ",", " ", ",,"];
    const trailers = ["", "", "", ","];
    let accepted = 0;
    let acceptedBatches = 0;
    let refusedByJson = 0;
    for (let round = 0; round < 12_000; round++) {
      const calls = Array.from({ length: 1 + next(3) }, object);
      let text =
        next(3) === 0 ? `[${calls.join(pick(separators))}${pick(trailers)}]${space()}` : (calls[0] as string);
      for (let edits = next(3) === 0 ? 1 + next(2) : 0; edits > 0; edits--) {
        const at = next(text.length + 1);
        text =
          next(2) === 0
            ? text.slice(0, at) + pick(noise) + text.slice(at)
            : text.slice(0, at) + text.slice(at + 1);
      }
      try {
        JSON.parse(text);
      } catch {
        refusedByJson++;
        expect(readPlainBody(text, DEPTH), text).toBeUndefined();
        continue;
      }
      if (!expectSameAsGeneral(text)) continue;
      accepted++;
      if (text.startsWith("[")) acceptedBatches++;
    }
    // Both sides of the line must be well represented, or the comparison proves little.
    expect(accepted).toBeGreaterThan(1000);
    expect(acceptedBatches).toBeGreaterThan(120);
    expect(refusedByJson).toBeGreaterThan(1000);
  });
});
