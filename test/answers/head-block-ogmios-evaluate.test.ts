import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Ogmios' evaluateTransaction resolves the transaction's inputs in the node's ledger state at
// its tip (the UTxO set; `additionalUtxo` exists for outputs not yet on chain, CardanoSolutions/ogmios
// docs "Transaction submission", evaluateTransaction), exactly as queryLedgerState/utxo reads it, which the
// registry sends only to a node at the served head (reads.atHead). evaluateTransaction is not there: a
// transaction spending an output made in the head block (a dApp chaining transactions: Mesh's and Lucid's
// Ogmios providers evaluate each before submitting) is evaluated on the node a block behind, which does not
// know the input (3004 CannotCreateEvaluationContext, "Unknown transaction input (missing from UTxO set)").

const H = 11_000_000;

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  evaluateTransaction: {
    result: (state: NodeState) => {
      if (state.height < H + 1)
        throw new NodeRejection(3004, "Unable to create the evaluation context from the given transaction.", {
          code: 3004,
          message: "Unable to create the evaluation context from the given transaction.",
          data: { reason: "Unknown transaction input (missing from UTxO set): 77…77#0" },
        });
      return [{ validator: { index: 0, purpose: "spend" }, budget: { memory: 5236222, cpu: 1212353 } }];
    },
  },
};

describe("Ogmios evaluateTransaction of a transaction spending an output of the head block", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  let apart: NodesBlockApart | undefined;
  beforeAll(async () => {
    apart = await nodesBlockApart("ada", H, softwareWith(ANSWERS));
    nodes.push(...apart.nodes);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("evaluates on a node at the head the caller saw", async () => {
    const head = await gw.call("ada", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "queryNetwork/blockHeight", params: {} }),
    });
    expect((head.json as { result: number }).result).toBe(H + 1);
    const errors: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("ada", `/${KEYS.all}/`, {
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: i + 2,
          method: "evaluateTransaction",
          params: { transaction: { cbor: "84a300818258207777" } },
        }),
      });
      const answer = got.json as { error?: unknown };
      if (answer.error !== undefined) errors.push(answer.error);
    }
    // the node behind answers 3004 at HTTP 400, as Ogmios does (Server/Http.hs: an error is a 400), and the
    // call must not have gone there at all
    const behind = nodes[1] as LoopbackNode;
    const asked = behind.requests.filter(
      (r) => r.body.includes('"evaluateTransaction"') && r.headers["x-request-id"] !== undefined,
    ).length;
    expect({ askedBehind: asked, errors }).toEqual({ askedBehind: 0, errors: [] });
  });
});
