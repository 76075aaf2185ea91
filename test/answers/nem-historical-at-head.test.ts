import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// NIS1's historical account data names its heights in the query (GET /account/historical/get?address=…
// &startHeight=…&endHeight=…&increment=…) or the body (POST /account/historical/get/batch), and the node
// reads up to the lower of endHeight and its own last block (NemProject/nem AccountController
// accountHistoricalDataGet: Math.min(request.getEndHeight(), blockChainLastBlockLayer.getLastBlockHeight())),
// with no word that it stopped short. What a user saw: behind two nodes one block apart, an account's history
// through the head block, asked right after /chain/height named that block, came back without its last
// entry about half the time.

const nem = endpointsByLabel.get("nem") as Endpoint;
const H = 4_500_000;
const ADDRESS = "NALICE2A73DLYTP4365GNFCURAUP3XVBFO7YNYOW";

/** The account's data at each height from H − 1 through the lower of H + 1 and the node's last block. */
const history = (height: number) => ({
  data: Array.from({ length: Math.min(H + 1, height) - (H - 1) + 1 }, (_, i) => ({
    height: H - 1 + i,
    address: ADDRESS,
    balance: 1_000_000 * (H - 1 + i),
    vestedBalance: 0,
    unvestedBalance: 0,
    importance: 0,
    pageRank: 0,
  })),
});
const answers: Record<string, TypicalAnswer> = {
  "GET /account/historical/get": { result: ({ height }) => history(height) },
  "POST /account/historical/get/batch": { result: ({ height }) => ({ data: [history(height)] }) },
};

describe("NIS1 historical account data through the head block, two nodes one block apart", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all(
      [H + 1, H].map((height) =>
        startLoopbackNode(softwareNode(nem, nodeState(nem, height), [""], { answers })),
      ),
    );
    gw = await startGateway({
      upstreams: { nem: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "nem");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  const query = `address=${ADDRESS}&startHeight=${H - 1}&endHeight=${H + 1}&increment=1`;

  it("GET /account/historical/get after /chain/height: the head block's entry is there", async () => {
    const lasts: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      expect((await gw.call("nem", `/${KEYS.all}/chain/height`)).json).toEqual({ height: H + 1 });
      const r = await gw.call("nem", `/${KEYS.all}/account/historical/get?${query}`);
      expect(r.status, r.text).toBe(200);
      lasts.push((r.json as ReturnType<typeof history>).data.at(-1)?.height);
    }
    expect(lasts).toEqual(lasts.map(() => H + 1));
  });

  it("POST /account/historical/get/batch after /chain/height: the head block's entry is there", async () => {
    const lasts: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      expect((await gw.call("nem", `/${KEYS.all}/chain/height`)).json).toEqual({ height: H + 1 });
      const r = await gw.call("nem", `/${KEYS.all}/account/historical/get/batch`, {
        method: "POST",
        body: JSON.stringify({
          accounts: [{ account: ADDRESS }],
          startHeight: H - 1,
          endHeight: H + 1,
          incrementBy: 1,
        }),
        headers: { "content-type": "application/json" },
      });
      expect(r.status, r.text).toBe(200);
      lasts.push((r.json as { data: ReturnType<typeof history>[] }).data[0]?.data.at(-1)?.height);
    }
    expect(lasts).toEqual(lasts.map(() => H + 1));
  });
});
