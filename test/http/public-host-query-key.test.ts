import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTarget } from "../../src/http/target.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// docs/upstreams.md: a node never receives the caller's key, "a query parameter that carries it (a tool's
// `?apikey=`) is dropped". On a public host a call needs no key: one sent in the query alone (the path has
// none) is dropped all the same, by its shape.
const keyless = (first: string) => first.startsWith("FN");

describe("a key in a keyless call's query", () => {
  it("is dropped by its shape, written or percent-encoded; the rest of the query goes as sent", () => {
    expect(parseTarget(`/?apikey=${KEYS.all}&x=1`, keyless).query).toBe("?x=1");
    expect(parseTarget(`/?x=1&token=app-${KEYS.all}-7`, keyless).query).toBe("?x=1");
    expect(parseTarget(`/?${KEYS.all}`, keyless).query).toBe("");
    expect(parseTarget(`/?apikey=%46${KEYS.all.slice(1)}`, keyless).query).toBe("");
  });

  it("an address that holds a key's shape inside a word is no key", () => {
    const query = "?account=7xKXtg2CW87dFNabcdefghijklmnop97TX&visible=true";
    expect(parseTarget(`/wallet/getaccount${query}`, keyless).query).toBe(query);
  });
});

describe("a caller's key in the query, on a public host", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x38" }));
    gw = await startGateway({
      upstreams: { bsc: [node.url] },
      publicHosts: { "bsc-public.example": "bsc" },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("with the key in the path too, never reaches the node", async () => {
    const r = await gw.call("bsc", `/${KEYS.all}/?apikey=${KEYS.all}&x=1`, {
      body: rpcBody("eth_blockNumber"),
    });
    expect(r.status).toBe(200);
    expect(node.requests.at(-1)?.url).toBe("/?x=1");
  });

  it("with the key in the query alone, the call is served keyless and the node never sees the key", async () => {
    const r = await gw.call("bsc", `/?apikey=${KEYS.all}&x=1`, {
      body: rpcBody("eth_blockNumber"),
      host: "bsc-public.example",
    });
    expect(r.status).toBe(200);
    expect(node.requests.at(-1)?.url).toBe("/?x=1");
    const seen = node.requests.map((q) => `${q.url} ${q.rawHeaders.join(" ")} ${q.body}`).join("\n");
    expect(seen).not.toContain(KEYS.all);
  });
});
