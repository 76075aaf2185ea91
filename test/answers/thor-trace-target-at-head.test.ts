import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { Reply, Responder } from "../support/loopback-node.js";
import { type NodesBlockApart, nodesBlockApart } from "../support/nodes-block-apart.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// VeChain Thor's POST /debug/tracers and /debug/storage-range name what they run at by a target: a
// transaction by its id and a clause (`txID/clause`), which the node looks up on its best chain
// (vechain/thor api/debug/debug.go parseTarget: GetTransactionMeta, utils.Forbidden "transaction not found",
// a 403 with that text), or `blockID/tx/clause`. A caller that saw its transaction in the best block traced
// it on the node a block behind, which had not got it. Here the transaction is in block H + 1.

const H = 9_000_000;
const TX = `0x${"7a".repeat(32)}`;

function thor(endpoint: Endpoint, height: number): Responder {
  const base = softwareNode(endpoint, nodeState(endpoint, height));
  return (request) => {
    const path = request.url.split("?")[0];
    if (request.method !== "POST" || (path !== "/debug/tracers" && path !== "/debug/storage-range"))
      return base(request);
    if (height <= H)
      return {
        status: 403,
        headers: { "content-type": "text/plain; charset=utf-8" },
        body: "transaction not found\n",
      } satisfies Reply;
    const body =
      path === "/debug/tracers"
        ? {
            type: "CALL",
            from: `0x${"11".repeat(20)}`,
            to: `0x${"22".repeat(20)}`,
            value: "0x0",
            gas: "0x0",
            gasUsed: "0x1f2",
            input: "0x",
            output: "0x",
          }
        : { storage: {}, nextKey: null };
    return {
      status: 200,
      headers: { "content-type": "application/json; charset=utf-8" },
      body: `${JSON.stringify(body)}\n`,
    } satisfies Reply;
  };
}

describe("VeChain's traces by a transaction's id through two Thor nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart("vet", H, thor);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  for (const [path, body] of [
    ["/debug/tracers", { name: "call", target: `${TX}/0` }],
    ["/debug/storage-range", { address: `0x${"22".repeat(20)}`, target: `${TX}/0`, maxResult: 10 }],
  ] as const)
    it(`${path} of a transaction in the best block just read finds it every time`, async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        const best = (await gw.call("vet", `/${KEYS.all}/blocks/best`, { method: "GET" })).json as {
          number: number;
        };
        expect(best.number).toBe(H + 1);
        const traced = await gw.call("vet", `/${KEYS.dedicated}${path}`, {
          body: JSON.stringify(body),
          headers: { "content-type": "application/json" },
        });
        statuses.push(traced.status);
      }
      expect(statuses).toEqual(statuses.map(() => 200));
    });
});
