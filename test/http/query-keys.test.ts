import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTarget } from "../../src/http/target.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import {
  jsonRpcResponder,
  type LoopbackNode,
  restResponder,
  startLoopbackNode,
} from "../support/loopback-node.js";

// docs/upstreams.md: a node never receives a caller's key, "a query parameter that carries it (a tool's
// `?apikey=`) is dropped". Two ways it still reached the node:
// - percent-encoded: a node reads its query decoded, so `apikey=%46N…` (a tool that encodes every value, or
//   a caller who pasted an encoded URL) hands it the key as surely as `apikey=FN…` does;
// - another key of this gateway: a tool configured with `?apikey=` appends its own key to whatever URL it
//   is given; left at the caller's key for another network (or at the key a rotation replaced, still in
//   its grace), it rode along to the node of the key in the path, a third-party provider's among them.
// A value of a key's shape that is no key (an address may hold one) still goes.
const encoded = `%46${KEYS.all.slice(1)}`;
const address = "FNabcdefghijklmnop97TXqrstuvwxyz";

describe("a key in a keyed call's query", () => {
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

  describe("the caller's own, percent-encoded", () => {
    it("is dropped as the key written plainly is; the rest goes as sent", () => {
      expect(parseTarget(`/${KEYS.all}/?apikey=${encoded}&x=1`, true).query).toBe("?x=1");
      expect(parseTarget(`/${KEYS.all}/?x=%41&key=FN%74${KEYS.all.slice(3)}`, true).query).toBe("?x=%41");
      expect(parseTarget(`/${KEYS.all}/?x=%41`, true).query).toBe("?x=%41");
    });

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

  describe("another key of this gateway", () => {
    it("never reaches a JSON-RPC node, written or percent-encoded", async () => {
      for (const query of [`?apikey=${KEYS.ethOnly}&x=1`, `?x=1&apikey=%46${KEYS.dedicated.slice(1)}`]) {
        const r = await gw.call("eth", `/${KEYS.all}/${query}`, { body: rpcBody("eth_blockNumber") });
        expect(r.status).toBe(200);
        expect(eth.requests.at(-1)?.url).toBe("/?x=1");
      }
      for (const key of [KEYS.ethOnly, KEYS.dedicated]) expect(seen(eth)).not.toContain(key);
    });

    it("never reaches a REST node", async () => {
      const r = await gw.call("algo", `/${KEYS.all}/v2/status?token=${KEYS.noArchive}`);
      expect(r.status).toBe(200);
      expect(algo.requests.at(-1)?.url).toBe("/v2/status");
      expect(seen(algo)).not.toContain(KEYS.noArchive);
    });

    it("a key-shaped value no key has goes as sent", async () => {
      const r = await gw.call("algo", `/${KEYS.all}/v2/status?account=${address}&n=1`);
      expect(r.status).toBe(200);
      expect(algo.requests.at(-1)?.url).toBe(`/v2/status?account=${address}&n=1`);
    });
  });
});
