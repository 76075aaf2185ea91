import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { LoopbackNode, Reply, Responder } from "../support/loopback-node.js";
import { type NodesBlockApart, nodesBlockApart } from "../support/nodes-block-apart.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// VeChain Thor's GET /fees/history reads at the node's best block (newestBlock left out is
// `best`) or at the block `newestBlock` names; the registry lists it neither in reads.atHeadPaths nor in
// reads.paths, so through two nodes a block apart it lands on the node behind: the head a caller sees goes
// back (oldestBlock + blockCount - 1 is the node's best), and a newestBlock the caller saw is refused.
//
// Real Thor (vechain/thor api/fees/fees.go validateGetFeesHistoryParams): newestBlock goes through
// utils.ParseRevision ("" is best) and utils.GetSummary; a block the node does not have is
// utils.BadRequest(errors.WithMessage(err, "newestBlock")) -> 400 "newestBlock: not found" (plain text);
// processBlockRange: oldestBlock = newest.Number() + 1 - blockCount.

const H = 9_000_000;

function thor(endpoint: Endpoint, height: number): Responder {
  const base = softwareNode(endpoint, nodeState(endpoint, height));
  return (request) => {
    const [path, query] = request.url.split("?");
    if (request.method !== "GET" || path !== "/fees/history") return base(request);
    const params = new URLSearchParams(query ?? "");
    const count = Number(params.get("blockCount"));
    const named = params.get("newestBlock") ?? "";
    const newest = named === "" || named === "best" ? height : Number(named);
    if (newest > height)
      return {
        status: 400,
        headers: { "content-type": "text/plain; charset=utf-8" },
        body: "newestBlock: not found\n",
      } satisfies Reply;
    return {
      status: 200,
      headers: { "content-type": "application/json; charset=utf-8" },
      body: `${JSON.stringify({
        oldestBlock: newest + 1 - count,
        baseFees: Array(count).fill("0x9184e72a000"),
        gasUsedRatios: Array(count).fill(0),
      })}\n`,
    } satisfies Reply;
  };
}

describe("VeChain fees history through two Thor nodes a block apart", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  let apart: NodesBlockApart | undefined;
  beforeAll(async () => {
    apart = await nodesBlockApart("vet", H, thor);
    nodes.push(...apart.nodes);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("the head a caller saw never goes back in /fees/history (newestBlock left out: best)", async () => {
    const best = await gw.call("vet", `/${KEYS.all}/blocks/best`, { method: "GET" });
    expect((best.json as { number: number }).number).toBe(H + 1);
    const newest: number[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("vet", `/${KEYS.all}/fees/history?blockCount=1`, { method: "GET" });
      newest.push((got.json as { oldestBlock: number }).oldestBlock);
    }
    expect(newest).toEqual(Array(8).fill(H + 1));
  });

  it("a newestBlock the caller saw is answered, not 400 'newestBlock: not found'", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const got = await gw.call("vet", `/${KEYS.all}/fees/history?blockCount=4&newestBlock=${H + 1}`, {
        method: "GET",
      });
      statuses.push(got.status);
    }
    expect(statuses).toEqual(Array(8).fill(200));
  });
});
