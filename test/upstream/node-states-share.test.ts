import { afterEach, describe, expect, it, vi } from "vitest";
import { type HandleShare, NodeStates, type SharedHandle } from "../../src/upstream/node-states.js";
import type { Upstream } from "../../src/upstream/upstreams.js";

// What a process tells the other instances of the filters it sees made, and what it asks of them
// (src/upstream/shared-handles.ts keeps it in Redis; test/answers/shared-filters.test.ts runs it there).

const node = (name: string) => ({ name, health: { inRotation: true } }) as unknown as Upstream;
const members = [node("n0"), node("n1")];

/** A share that records what it was told, and answers `recall` from `seen`. */
function recordingShare(seen: Record<string, SharedHandle> = {}) {
  const told: string[] = [];
  const share: HandleShare = {
    made: (owner, name, at) => told.push(`made ${owner} ${name} ${at}`),
    kept: (owner, name) => told.push(`kept ${owner} ${name}`),
    recall: async (owner, names) => {
      told.push(`recall ${owner} ${names.join(",")}`);
      return names.map((name) => seen[name] ?? { node: undefined, owner: undefined });
    },
  };
  return { share, told };
}

describe("node states shared with other instances", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("tells the share each state made, by its name as the node reads it", () => {
    const states = new NodeStates(() => members);
    const { share, told } = recordingShare();
    states.share = share;
    states.made("k1", "0X01", members[1] as Upstream);
    expect(told).toEqual(["made k1 0x1 n1"]);
  });

  it("keeps a state alive in the share while it is polled here, at most once a minute", () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const states = new NodeStates(() => members);
    const { share, told } = recordingShare();
    states.share = share;
    states.made("k1", "0xa", members[0] as Upstream);
    vi.setSystemTime(1_000_000 + 30_000);
    expect(states.nodeOf("k1", "0xa")?.name).toBe("n0");
    expect(told).toEqual(["made k1 0xa n0"]);
    vi.setSystemTime(1_000_000 + 61_000);
    states.nodeOf("k1", "0xa");
    states.nodeOf("k1", "0xa");
    expect(told).toEqual(["made k1 0xa n0", "kept k1 0xa"]);
  });

  it("asks only of the names it does not know, and learns their node or their maker", async () => {
    const states = new NodeStates(() => members);
    const { share, told } = recordingShare({
      "0xb": { node: "n1", owner: "k1" },
      "0xc": { node: undefined, owner: "k2" },
      "0xd": { node: "gone", owner: "k1" },
    });
    states.share = share;
    states.made("k1", "0xa", members[0] as Upstream);
    told.length = 0;
    expect(states.recall("k1", ["0xa"])).toBeUndefined();
    await states.recall("k1", ["0xa", "0x0b", "0xc", "0xd"]);
    expect(told).toEqual(["recall k1 0xb,0xc,0xd"]);
    expect(states.nodeOf("k1", "0xb")?.name).toBe("n1");
    // another caller's: refused as one this process saw made
    expect(states.madeByAnother("k1", "0xc")).toBe(true);
    // a node this config does not have: where the choice sends it
    expect(states.nodeOf("k1", "0xd")).toBeUndefined();
    expect(states.madeByAnother("k1", "0xd")).toBe(false);
  });

  it("decides alone when the share fails or there is none", async () => {
    const states = new NodeStates(() => members);
    expect(states.recall("k1", ["0xa"])).toBeUndefined();
    states.share = { ...recordingShare().share, recall: () => Promise.reject(new Error("away")) };
    await expect(states.recall("k1", ["0xa"])).resolves.toBeUndefined();
    expect(states.nodeOf("k1", "0xa")).toBeUndefined();
  });
});
