import { describe, expect, it } from "vitest";
import { UpstreamGroup } from "../../src/upstream/group.js";
import type { Upstream } from "../../src/upstream/upstreams.js";

// A finalized block named again with another hash (group.ts finalizedSeen): the final blocks were rewritten
// under the label (anvil_reorg deeper than finality), and every answer kept for it goes; unless another node
// in rotation still names the old one, and the node that changed is the one on other blocks.

const nodeAt = (head: number) => ({ health: { inRotation: true, head } }) as unknown as Upstream;

function watched(nodes: Upstream[]): { group: UpstreamGroup; forgotten: () => number } {
  const group = new UpstreamGroup("dev", "/", nodes, 10);
  let forgotten = 0;
  group.cache = { forgetAll: () => forgotten++, shared: undefined } as never;
  return { group, forgotten: () => forgotten };
}

describe("final blocks rewritten", () => {
  it("one node: taken at once", () => {
    const a = nodeAt(200);
    const { group, forgotten } = watched([a]);
    group.finality.finalizedSeen(136, "0xold", a);
    group.finality.finalizedSeen(136, "0xnew", a);
    expect(forgotten()).toBe(1);
    expect(group.finalized).toBe(136);
  });

  it("two nodes of one chain: taken once neither names the old block", () => {
    const [a, b] = [nodeAt(200), nodeAt(200)];
    const { group, forgotten } = watched([a, b]);
    group.finality.finalizedSeen(136, "0xold", a);
    group.finality.finalizedSeen(136, "0xold", b);
    group.finality.finalizedSeen(136, "0xnew", a);
    expect(forgotten()).toBe(0);
    group.finality.finalizedSeen(136, "0xnew", b);
    group.finality.finalizedSeen(136, "0xnew", a);
    expect(forgotten()).toBe(1);
  });

  it("one node on other final blocks beside one that still names the old: that node's own trouble", () => {
    const [a, b] = [nodeAt(200), nodeAt(200)];
    const { group, forgotten } = watched([a, b]);
    group.finality.finalizedSeen(136, "0xold", a);
    group.finality.finalizedSeen(136, "0xold", b);
    for (let i = 0; i < 3; i++) {
      group.finality.finalizedSeen(136, "0xother", a);
      group.finality.finalizedSeen(136, "0xold", b);
    }
    expect(forgotten()).toBe(0);
  });

  it("a node a finalized block behind on its own fork, while the others' finality moves on: its own trouble", () => {
    const [a, b, c] = [nodeAt(200), nodeAt(200), nodeAt(199)];
    const { group, forgotten } = watched([a, b, c]);
    for (let height = 100; height < 110; height++) {
      group.finality.finalizedSeen(height, `0xgood${height}`, a);
      group.finality.finalizedSeen(height, `0xgood${height}`, b);
      group.finality.finalizedSeen(height - 1, `0xfork${height - 1}`, c);
    }
    expect(forgotten()).toBe(0);
  });
});
