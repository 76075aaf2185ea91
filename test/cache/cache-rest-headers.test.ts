import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A REST answer through the cache keeps the node's headers a client would have had without it: the cache
// turned on changes no answer but for x-cache. An Octez node behind a proxy that adds validators.
describe("a REST answer from the cache carries its node's headers", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(async (req) => {
      // a node that answers once the gateway holds the other seven calls on this one
      if (req.url === "/chains/slow/chain_id") {
        await eventually(
          async () => (await gw.metric("gateway_cache_requests_total", { outcome: "coalesced" })) === 7,
          5_000,
          "seven calls waiting on the first",
        );
        return { body: '"NetXdQprcVkpaWU"' };
      }
      return req.url === "/chains/main/chain_id"
        ? {
            headers: {
              "cache-control": "max-age=60",
              etag: '"e1"',
              "last-modified": "Fri, 27 Nov 2026 10:00:00 GMT",
            },
            body: '"NetXdQprcVkpaWU"',
          }
        : undefined;
    });
    gw = await startGateway({ upstreams: { xtz: [node.url] }, cache: { ...DEFAULT_CACHE, enabled: true } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("on the miss and on the hit", async () => {
    const get = () => gw.call("xtz", `/${KEYS.all}/chains/main/chain_id`, { method: "GET" });
    const [miss, hit] = [await get(), await get()];
    expect([miss.headers["x-cache"], hit.headers["x-cache"]]).toEqual(["miss", "hit"]);
    for (const answer of [miss, hit]) {
      expect(answer.json).toBe("NetXdQprcVkpaWU");
      expect(answer.headers["cache-control"]).toBe("max-age=60");
      expect(answer.headers.etag).toBe('"e1"');
      expect(answer.headers["last-modified"]).toBe("Fri, 27 Nov 2026 10:00:00 GMT");
    }
    expect(node.requests.filter((r) => r.url === "/chains/main/chain_id")).toHaveLength(1);
  });

  it("identical reads while the first is at the node wait for its answer: the node is asked once", async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => gw.call("xtz", `/${KEYS.all}/chains/slow/chain_id`, { method: "GET" })),
    );
    expect(answers.map((a) => a.json)).toEqual(Array(8).fill("NetXdQprcVkpaWU"));
    expect(answers.map((a) => a.headers["x-cache"]).sort()).toEqual([...Array(7).fill("coalesced"), "miss"]);
    expect(node.requests.filter((r) => r.url === "/chains/slow/chain_id")).toHaveLength(1);
  });
});
