import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// A NEM wallet told the head H+1 by /chain/height then listed the account's incoming transfers and its
// mosaics, and half the time got them without block H+1's transfer and with the balance before it: those
// reads went round robin to the node a block behind. NIS1 answers an account's transfers
// (GET /account/transfers/incoming|outgoing|all, nem-sdk's com.requests.account.transactions.*) and its
// mosaics (GET /account/mosaic/owned, nem-sdk's account.mosaics.owned) from its chain at its head
// (NemProject/nem AccountTransfersController, AccountMosaicController): they are reads at the head
// (registry `reads.atHeadPaths`), as /account/get is.

const nem = endpointsByLabel.get("nem") as Endpoint;
const H = 5_000_000;
const ADDRESS = "NALICELGU3IVY4DPJKHYLSSVYFFWYS5QPLYEZDJJ";
const SENDER = "826cedee421ff66e708858c17815fcd831a4bb68e3d8956299334e9e24380ba8";

/** A NIS1 TransactionMetaDataPair of a transfer of `amount` to ADDRESS in block `height`. */
function transfer(height: number, id: number, amount: number): unknown {
  return {
    meta: {
      innerHash: {},
      id,
      hash: { data: `${height.toString(16).padStart(8, "0")}${"ab".repeat(28)}` },
      height,
    },
    transaction: {
      timeStamp: 100_000_000 + height,
      amount,
      signature: "cd".repeat(64),
      fee: 50_000,
      recipient: ADDRESS,
      type: 257,
      deadline: 100_003_600 + height,
      message: {},
      version: 1_744_830_465,
      signer: SENDER,
    },
  };
}

const answers: Record<string, TypicalAnswer> = {
  // the newest first; the transfer of block H+1 only on a node that has that block
  "GET /account/transfers/incoming": {
    result: ({ height }) => ({
      data: [...(height >= H + 1 ? [transfer(H + 1, 77, 5_000_000)] : []), transfer(H - 10, 76, 1_000_000)],
    }),
  },
  "GET /account/mosaic/owned": {
    result: ({ height }) => ({
      data: [
        { quantity: height >= H + 1 ? 6_000_000 : 1_000_000, mosaicId: { namespaceId: "nem", name: "xem" } },
      ],
    }),
  },
};

describe("NIS1 account reads at the head, behind two nodes one block apart (loopback NIS1)", () => {
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

  it("/chain/height says H+1; 20 reads of the account's incoming transfers after it all hold block H+1's", async () => {
    const height = await gw.call("nem", `/${KEYS.all}/chain/height`);
    expect(height.json).toEqual({ height: H + 1 });
    const heights: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await gw.call("nem", `/${KEYS.all}/account/transfers/incoming?address=${ADDRESS}`);
      expect(r.status, r.text).toBe(200);
      heights.push((r.json as { data: { meta: { height: number } }[] }).data[0]?.meta.height ?? 0);
    }
    expect(heights.filter((h) => h < H + 1)).toEqual([]);
  });

  it("20 reads of the account's mosaics after it: never the balance before block H+1", async () => {
    const quantities: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await gw.call("nem", `/${KEYS.all}/account/mosaic/owned?address=${ADDRESS}`);
      expect(r.status, r.text).toBe(200);
      quantities.push((r.json as { data: { quantity: number }[] }).data[0]?.quantity ?? 0);
    }
    expect(quantities.filter((q) => q !== 6_000_000)).toEqual([]);
  });
});
