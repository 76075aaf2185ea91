import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import { firstOf, type Responder } from "../support/loopback-node.js";
import { type NodesBlockApart, nodesBlockApart } from "../support/nodes-block-apart.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// algosdk's simulateTransactions: POST /v2/transactions/simulate. go-algorand evaluates the group on its
// ledger's latest round (daemon/algod/api/server/v2/handlers.go SimulateTransaction, ledger/simulation:
// the simulator's ledger at Latest()) and answers that round as `last-round` beside each transaction's
// result. An asset transfer whose receiver opted in in the head round fails on a node a round behind
// ("asset … missing from …"): a caller that saw the opt-in confirmed and simulated the transfer was told it
// would fail, and the round it was answered at went back.

const H = 41_000_000;
const ASSET = 31566704;
const RECEIVER = "VCMJKWOY5P5P7SKMZFFOCEROPJCZOTIJMNIYNUCKH7LRO45JMJP6UYBIJA";

/** The node's answer to the transfer: the opt-in is in round H + 1. */
function simulate(height: number): Responder {
  return (request) => {
    if (request.method !== "POST" || request.url.split("?")[0] !== "/v2/transactions/simulate")
      return undefined;
    const result = { "txn-result": { "pool-error": "", txn: {} } };
    return {
      status: 200,
      body: {
        version: 2,
        "last-round": height,
        "txn-groups": [
          height > H
            ? { "txn-results": [result] }
            : {
                "failed-at": [0],
                // ledger/apply/asset.go putIn's refusal of a receiver that has not opted in
                "failure-message": `asset ${ASSET} missing from ${RECEIVER}`,
                "txn-results": [result],
              },
        ],
      },
    };
  };
}

describe("algod's simulation, two nodes a round apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart("algo", H, (endpoint: Endpoint, height: number) =>
      firstOf(simulate(height), softwareNode(endpoint, nodeState(endpoint, height))),
    );
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  const simulated = async () =>
    (
      await gw.call("algo", `/${KEYS.dedicated}/v2/transactions/simulate?format=json`, {
        body: JSON.stringify({ "txn-groups": [{ txns: [] }] }),
        headers: { "content-type": "application/json" },
      })
    ).json as { "last-round"?: number; "txn-groups"?: { "failure-message"?: string }[] };

  it("after the head round was read, it runs at that round, never the one before", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const status = (await gw.call("algo", `/${KEYS.all}/v2/status`)).json as { "last-round": number };
      expect(status["last-round"]).toBe(H + 1);
      const got = await simulated();
      seen.push([got["last-round"], got["txn-groups"]?.[0]?.["failure-message"]]);
    }
    expect(seen).toEqual(seen.map(() => [H + 1, undefined]));
  });

  it("the round it answers is one the head never goes below", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      expect((await simulated())["last-round"]).toBe(H + 1);
      seen.push(
        ((await gw.call("algo", `/${KEYS.all}/v2/status`)).json as { "last-round": number })["last-round"],
      );
    }
    expect(seen).toEqual(seen.map(() => H + 1));
  });
});
