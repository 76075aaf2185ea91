import { describe, expect, it } from "vitest";
import type { HeadCall } from "../../src/registry/types.js";
import { probeRequest, readHead } from "../../src/upstream/probe-call.js";

const rpc = (field: string[], encoding: HeadCall["encoding"], method = "m"): HeadCall => ({
  kind: "jsonrpc",
  method,
  field,
  encoding,
});

describe("reading a head call's answer", () => {
  it("decodes each of the registry's encodings along the field path", () => {
    expect(readHead(rpc(["result"], "hex-quantity"), '{"jsonrpc":"2.0","id":1,"result":"0x1f"}')).toBe(31);
    expect(
      readHead(
        rpc(["result", "header", "BlockNum"], "decimal-string"),
        '{"result":{"header":{"BlockNum":"42"}}}',
      ),
    ).toBe(42);
    expect(
      readHead(
        { kind: "rest", method: "GET", path: "/v2/status", field: ["last-round"], encoding: "integer" },
        '{"last-round":7}',
      ),
    ).toBe(7);
  });

  it("reads a JSON-RPC 1.0 answer, whose null error is no error (Bitcoin Core, Dogecoin Core)", () => {
    expect(
      readHead(rpc(["result"], "integer", "getblockcount"), '{"result":812345,"error":null,"id":1}'),
    ).toBe(812345);
  });

  it("refuses an error answer, a missing field, a wrong encoding or a height that is not one", () => {
    expect(() =>
      readHead(rpc(["result"], "hex-quantity"), '{"error":{"code":-32000,"message":"syncing"}}'),
    ).toThrow(/error/);
    expect(() => readHead(rpc(["result", "number"], "hex-quantity"), '{"result":{}}')).toThrow(
      /result.number/,
    );
    expect(() => readHead(rpc(["result"], "hex-quantity"), '{"result":31}')).toThrow(/hex-quantity/);
    expect(() => readHead(rpc(["result"], "integer"), '{"result":-1}')).toThrow(/height/);
    expect(() => readHead(rpc(["result"], "integer"), "<html>")).toThrow();
  });

  it("builds the probe from the head call and its mount: the envelope's members only, the route under the mount", () => {
    expect(
      probeRequest(
        {
          ...(rpc(["result"], "hex-quantity", "eth_blockNumber") as HeadCall & { kind: "jsonrpc" }),
          params: [],
        },
        "/jsonrpc",
      ),
    ).toMatchObject({
      method: "POST",
      path: "/jsonrpc",
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    });
    expect(probeRequest(rpc(["result"], "integer"), "/").body).toBe('{"jsonrpc":"2.0","id":1,"method":"m"}');
    expect(
      probeRequest(
        {
          kind: "rest",
          method: "POST",
          path: "/wallet/getnowblock",
          body: {},
          field: ["n"],
        },
        "/",
      ),
    ).toMatchObject({
      method: "POST",
      path: "/wallet/getnowblock",
      body: "{}",
    });
  });
});
