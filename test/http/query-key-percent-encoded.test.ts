import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTarget } from "../../src/http/target.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import {
  jsonRpcResponder,
  type LoopbackNode,
  restResponder,
  startLoopbackNode,
} from "../support/loopback-node.js";

// docs/upstreams.md: a node never receives the caller's key, "a query parameter that carries it (a tool's
// `?apikey=`) is dropped". A node reads its query percent-decoded, so `apikey=%46N…` (a tool that encodes
// every value, or a caller who pasted an encoded URL) hands it the key as surely as `apikey=FN…` does.
const encoded = `%46${KEYS.all.slice(1)}`;

describe("the caller's key percent-encoded in a keyed call's query", () => {
  it("is dropped as the key written plainly is; the rest goes as sent", () => {
    expect(parseTarget(`/${KEYS.all}/?apikey=${encoded}&x=1`, true).query).toBe("?x=1");
    expect(parseTarget(`/${KEYS.all}/?x=%41&key=FN%74${KEYS.all.slice(3)}`, true).query).toBe("?x=%41");
    expect(parseTarget(`/${KEYS.all}/?x=%41`, true).query).toBe("?x=%41");
  });

  let eth: LoopbackNode;
  let algo: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    eth = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    algo = await startLoopbackNode(restResponder({ "GET /v2/status": { "last-round": 5 } }));
    gw = await startGateway({ upstreams: { eth: [eth.url], algo: [algo.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await eth?.close();
    await algo?.close();
  });

  const seen = (node: LoopbackNode) =>
    node.requests.map((q) => decodeURIComponent(`${q.url} ${q.rawHeaders.join(" ")} ${q.body}`)).join("\n");

  it("never reaches a JSON-RPC node", async () => {
    const r = await gw.call("eth", `/${KEYS.all}/?apikey=${encoded}&x=1`, {
      body: rpcBody("eth_blockNumber"),
    });
    expect(r.status).toBe(200);
    expect(eth.requests.at(-1)?.url).toBe("/?x=1");
    expect(seen(eth)).not.toContain(KEYS.all);
  });

  it("never reaches a REST node", async () => {
    const r = await gw.call("algo", `/${KEYS.all}/v2/status?apikey=${encoded}`);
    expect(r.status).toBe(200);
    expect(algo.requests.at(-1)?.url).toBe("/v2/status");
    expect(seen(algo)).not.toContain(KEYS.all);
  });
});
