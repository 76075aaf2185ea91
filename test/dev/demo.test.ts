import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { gatewayOrigin } from "../../src/control/endpoint-urls.js";
import { curlLine } from "../../src/dev/demo.js";

function endpoint(label: string) {
  const found = endpointsByLabel.get(label);
  if (found === undefined) throw new Error(`no label ${label}`);
  return found;
}

const LOCAL = gatewayOrigin({ domain: "localhost", listen: { port: 8080 } });

function bodyOf(line: string): unknown {
  const match = /-d '(.*)'$/.exec(line);
  return match ? JSON.parse(match[1] as string) : undefined;
}

describe("the demo's curl lines", () => {
  it("send the registry's head call, with the params it declares", () => {
    const line = curlLine(endpoint("eth"), LOCAL, "FNkey");
    expect(line).toContain("http://eth.localhost:8080/FNkey/ ");
    expect(bodyOf(line)).toEqual({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] });
  });

  it("leave params out where the head call declares none, which Ogmios requires", () => {
    const head = endpoint("ada").head;
    expect(head.kind === "jsonrpc" && head.params).toBe(undefined);
    expect(bodyOf(curlLine(endpoint("ada"), LOCAL, "FNkey"))).not.toHaveProperty("params");
  });

  it("use TRON's native REST head, not the JSON-RPC mount", () => {
    const line = curlLine(endpoint("trx"), LOCAL, "FNkey");
    expect(line).toContain("-X POST http://trx.localhost:8080/FNkey/wallet/getnowblock");
    expect(bodyOf(line)).toEqual({});
  });
});
