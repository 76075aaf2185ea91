import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import type { Reply, Responder } from "../support/loopback-node.js";
import { type NodesBlockApart, nodesBlockApart } from "../support/nodes-block-apart.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// VeChain Thor's POST /debug/tracers/call traces a clause on the state of the block its ?revision= names,
// the best block when it names none (vechain/thor api/debug/debug.go handleTraceCall: utils.ParseRevision
// of "" is best, then GetSummaryAndState), as POST /accounts runs clauses. It was read anywhere: behind two
// nodes a block apart, a caller that saw the best block with a contract's new state traced a call on the
// state before it. Here the call's output is the number of the block it ran on (the call tracer's `output`).

const H = 9_000_000;

function thor(endpoint: Endpoint, height: number): Responder {
  const base = softwareNode(endpoint, nodeState(endpoint, height));
  return (request) => {
    if (request.method !== "POST" || request.url.split("?")[0] !== "/debug/tracers/call")
      return base(request);
    return {
      status: 200,
      headers: { "content-type": "application/json; charset=utf-8" },
      body: `${JSON.stringify({
        type: "CALL",
        from: "0x0000000000000000000000000000000000000000",
        to: "0x0000000000000000000000000000456e65726779",
        value: "0x0",
        gas: "0x0",
        gasUsed: "0x1f2",
        input: "0x18160ddd",
        output: `0x${height.toString(16).padStart(64, "0")}`,
      })}\n`,
    } satisfies Reply;
  };
}

describe("VeChain's traced call through two Thor nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart("vet", H, thor);
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  it("after the best block was read, it runs on that block's state, never the one before", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const best = (await gw.call("vet", `/${KEYS.all}/blocks/best`, { method: "GET" })).json as {
        number: number;
      };
      expect(best.number).toBe(H + 1);
      const traced = await gw.call("vet", `/${KEYS.dedicated}/debug/tracers/call`, {
        body: JSON.stringify({
          name: "call",
          to: "0x0000000000000000000000000000456e65726779",
          data: "0x18160ddd",
        }),
        headers: { "content-type": "application/json" },
      });
      seen.push(Number.parseInt((traced.json as { output: string }).output, 16));
    }
    expect(seen).toEqual(seen.map(() => H + 1));
  });
});
