import { describe, expect, it } from "vitest";
import type { GatewayError } from "../../src/errors/table.js";
import { arrayElements, parseJsonRpcBody } from "../../src/jsonrpc/scan.js";
import { seeded } from "../support/random.js";

const members = (text: string) => Object.fromEntries(parseJsonRpcBody(text, 64).calls[0]?.members ?? []);
const codeOf = (text: string) => {
  try {
    parseJsonRpcBody(text, 64);
    return undefined;
  } catch (error) {
    return (error as GatewayError).code;
  }
};

describe("JSON-RPC scan", () => {
  it("keeps each member's source text under its name", () => {
    expect(
      members('{"jsonrpc":"2.0", "id": 12345678901234567890 ,"method":"eth_call","params":[{"a":1}]}'),
    ).toEqual({
      jsonrpc: '"2.0"',
      id: "12345678901234567890",
      method: '"eth_call"',
      params: '[{"a":1}]',
    });
  });

  it("tells an envelope name from another of the same length", () => {
    expect(members('{"ix":1,"methox":"a","paramz":[],"jsonrpx":"2.0"}')).toEqual({
      ix: "1",
      methox: '"a"',
      paramz: "[]",
      jsonrpx: '"2.0"',
    });
  });

  it("reads an escaped name as the name it decodes to, so it cannot hide a second method", () => {
    expect(members('{"\\u006dethod":"a"}')).toEqual({ method: '"a"' });
    expect(codeOf('{"method":"eth_call","\\u006dethod":"admin_addPeer"}')).toBe("DUPLICATE_MEMBER");
    expect(codeOf('{"id":1,"id":2}')).toBe("DUPLICATE_MEMBER");
  });

  const ENVELOPE = new Set(["jsonrpc", "id", "method", "params"]);

  it("finds the same members as JSON.parse in generated objects, names known and unknown", () => {
    const names = [
      "id",
      "method",
      "params",
      "jsonrpc",
      "i",
      "idd",
      "Method",
      "param",
      "jsonrpc2",
      'x\\"y',
      "\\u0069d",
    ];
    const { next } = seeded(7);
    for (let round = 0; round < 2000; round++) {
      const chosen = [
        ...new Set(Array.from({ length: 1 + next(5) }, () => names[next(names.length)] as string)),
      ];
      const text = `{${chosen.map((name, i) => `"${name}":${i % 2 === 0 ? `[${i},"s"]` : `"v${i}"`}`).join(",")}}`;
      const decoded = chosen.map((name) => JSON.parse(`"${name}"`) as string);
      // the first member that is refused, in order: one seen before, or an envelope member in another
      // case ("Method"), which Go's encoding/json would read as that member
      const seen = new Set<string>();
      const refusal = decoded
        .map((name) => {
          const code = seen.has(name)
            ? "DUPLICATE_MEMBER"
            : ENVELOPE.has(name.toLowerCase()) && !ENVELOPE.has(name)
              ? "INVALID_REQUEST"
              : undefined;
          seen.add(name);
          return code;
        })
        .find((code) => code !== undefined);
      if (refusal !== undefined) {
        expect(codeOf(text)).toBe(refusal);
        continue;
      }
      const expected = Object.fromEntries(
        Object.entries(JSON.parse(text) as Record<string, unknown>).map(([k, v]) => [k, JSON.stringify(v)]),
      );
      expect(members(text)).toEqual(expected);
    }
  });

  it("splits a node's batch answer into its elements' source texts, an id past 2^53 as written", () => {
    expect(
      arrayElements(
        ' [ {"id":9007199254740993,"result":"a,]}"} ,\n{"id":"x","result":[1,{"b":[]}]},null,[] ] ',
      ),
    ).toEqual(['{"id":9007199254740993,"result":"a,]}"}', '{"id":"x","result":[1,{"b":[]}]}', "null", "[]"]);
    expect(arrayElements("[]")).toEqual([]);
    expect(arrayElements('{"id":1}')).toBeUndefined();
  });
});
