import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import { firstOf, type Responder } from "../support/loopback-node.js";
import { type NodesBlockApart, nodesBlockApart } from "../support/nodes-block-apart.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// algosdk's getLedgerStateDeltaForTransactionGroup(id): GET /v2/deltas/txn/group/{id}, a transaction's or
// its group's ledger delta. go-algorand (daemon/algod/api/server/v2/handlers.go
// GetLedgerStateDeltaForTransactionGroup) looks the id up in the TxnGroupDeltaTracer, which holds the
// groups of the rounds the node has evaluated (ledger/eval/txn_group_delta_tracer.go GetDeltaForID); an id
// it has not seen is notFound: 404 {"message": "failed retrieving State Delta: unable to find delta for id:
// …"} (errFailedRetrievingStateDelta). A caller that saw a group in the head round (its block, or its
// transaction's confirmed-round) and asks its delta must not be sent to the node a round behind.

const H = 41_000_000;
const GROUP = "3MC6LDHNCKUZ2ZBVEF5O3X2FEFLOMJI2DJ6W7NULVAKGNZ7OP2HQ";

function deltas(height: number): Responder {
  return (request) => {
    if (request.url.split("?")[0] !== `/v2/deltas/txn/group/${GROUP}`) return undefined;
    // the group is in round H + 1: only a node that has evaluated that round has its delta
    return height > H
      ? { status: 200, body: { accts: { accounts: [] }, hdr: { rnd: H + 1 }, txids: {} } }
      : {
          status: 404,
          body: { message: `failed retrieving State Delta: unable to find delta for id: ${GROUP}` },
        };
  };
}

describe("algod's ledger delta of a transaction group in the head round, two nodes a round apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart("algo", H, (endpoint: Endpoint, height: number) =>
      firstOf(deltas(height), softwareNode(endpoint, nodeState(endpoint, height))),
    );
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("is found every time after the head round was read", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const status = (await gw.call("algo", `/${KEYS.all}/v2/status`)).json as { "last-round": number };
      expect(status["last-round"]).toBe(H + 1);
      statuses.push((await gw.call("algo", `/${KEYS.dedicated}/v2/deltas/txn/group/${GROUP}`)).status);
    }
    expect(statuses).toEqual(statuses.map(() => 200));
  });
});
