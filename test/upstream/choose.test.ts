import { describe, expect, it, vi } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { UpstreamSpec } from "../../src/config/types.js";
import { UpstreamTable } from "../../src/upstream/upstreams.js";

/**
 * A group of `eth` upstreams with probes on, as the prober leaves them after a first probe whose head it
 * could not read (in rotation, nothing known), or still being checked.
 */
function group(specs: readonly UpstreamSpec[], start: "probed" | "checking" = "probed") {
  const table = new UpstreamTable(
    { upstreams: { eth: specs }, limits: DEFAULT_LIMITS, health: DEFAULT_HEALTH },
    endpointsByLabel,
    () => ({}) as never,
    () => {},
  );
  const found = table.group("eth", "/");
  if (found === undefined) throw new Error("no group");
  const byName = (name: string) => found.members.find((m) => m.name === name) ?? (undefined as never);
  if (start === "probed")
    for (const member of found.members) {
      member.health.headUnknown("not probed in this test", 1);
      found.judgeProbe(member);
    }
  return { group: found, byName };
}

const counts = (picks: readonly string[]) =>
  picks.reduce<Record<string, number>>((all, name) => {
    all[name] = (all[name] ?? 0) + 1;
    return all;
  }, {});

describe("choosing an upstream", () => {
  it("spreads calls over equal nodes in turn, and in proportion to their weights", () => {
    const equal = group([
      { url: "http://a:1", name: "a" },
      { url: "http://b:1", name: "b" },
    ]);
    const firsts = Array.from({ length: 10 }, () => equal.group.choose()[0]?.name ?? "");
    expect(firsts).toEqual(["a", "b", "a", "b", "a", "b", "a", "b", "a", "b"]);

    const weighted = group([
      { url: "http://a:1", name: "a", weight: 3 },
      { url: "http://b:1", name: "b", weight: 1 },
    ]);
    expect(counts(Array.from({ length: 400 }, () => weighted.group.choose()[0]?.name ?? ""))).toEqual({
      a: 300,
      b: 100,
    });
  });

  it("prefers the faster node, and moves calls away from one whose calls pile up", () => {
    const { group: g, byName } = group([
      { url: "http://a:1", name: "a" },
      { url: "http://b:1", name: "b" },
    ]);
    for (let i = 0; i < 20; i++) {
      byName("a").health.succeeded(5);
      byName("b").health.succeeded(50);
    }
    const firsts = counts(Array.from({ length: 110 }, () => g.choose()[0]?.name ?? ""));
    expect(firsts.a).toBeGreaterThan(90);
    byName("a").health.inFlight = 40; // a node starting to hang
    const later = counts(Array.from({ length: 100 }, () => g.choose()[0]?.name ?? ""));
    expect(later.b).toBeGreaterThan(later.a ?? 0);
  });

  it("tries every in-rotation node, fallbacks after primaries; the least bad only when none is in rotation; never a cordoned one", () => {
    const { group: g, byName } = group([
      { url: "http://a:1", name: "a" },
      { url: "http://b:1", name: "b", tier: "fallback" },
      { url: "http://c:1", name: "c" },
      { url: "http://d:1", name: "d" },
      { url: "http://e:1", name: "e" },
    ]);
    byName("c").health.probed(10, 1);
    byName("c").health.judgeProbe(20, 2); // lagging
    byName("d").health.failed("refused", "ECONNREFUSED");
    byName("e").health.cordon(true);
    expect(g.choose().map((u) => u.name)).toEqual(["a", "b"]); // no stale answer while a fresh one can be had
    byName("a").health.failed("refused", "ECONNREFUSED");
    expect(g.choose().map((u) => u.name)).toEqual(["b"]); // the fallback serves
    byName("b").health.cordon(true);
    // the least bad rather than none: the lagging node, then the nodes that refused their last connection
    expect(g.choose().map((u) => u.name)).toEqual(["c", "a", "d"]);
    expect(g.choose(true).map((u) => u.name)).toEqual(["c"]); // a write goes to a lagging node only
    byName("c").health.probeFailed("timeout", "no answer within 1500 ms");
    // every node failing: reads try the one that still takes connections first, writes none
    expect(g.choose().map((u) => u.name)).toEqual(["c", "a", "d"]);
    expect(g.choose(true)).toEqual([]);
    expect(g.whyNone(true)).toMatch(/failing/);
    byName("c").health.probeFailed("refused", "ECONNREFUSED");
    // every node refuses connections: nothing to try, NO_UPSTREAM at once
    expect(g.choose()).toEqual([]);
    expect(g.whyNone(false)).toBe("no upstream of this network takes connections");
  });

  it("never chooses a node on another chain or one not checked yet; calls wait for the first verdict", async () => {
    const { group: g, byName } = group(
      [
        { url: "http://a:1", name: "a" },
        { url: "http://b:1", name: "b" },
      ],
      "checking",
    );
    expect(g.choose()).toEqual([]);
    expect(g.checking).toBe(true);
    expect(g.whyNone(false)).toMatch(/still being checked/);
    const waited = new Promise<string>((resolve) =>
      g.whenChecked(5_000, () => resolve(g.choose()[0]?.name ?? "none")),
    );
    byName("a").health.wrongChain('eth_chainId answered chain "56", but eth is chain "1"');
    byName("b").health.probed(100, 1);
    g.judgeProbe(byName("b"));
    expect(await waited).toBe("b");
    byName("b").health.failed("refused", "ECONNREFUSED");
    expect(g.choose()).toEqual([]); // the node on another chain is never a last resort
    expect(byName("a").health.state).toBe("wrong-chain");
  });

  it("a filter is its maker's: another caller's filter of the same name, made on another node, is not it", () => {
    const { group: g, byName } = group([
      { url: "http://a:1", name: "a" },
      { url: "http://b:1", name: "b" },
    ]);
    g.states.made("caller-1", "0x1", byName("a"));
    g.states.made("caller-2", "0x1", byName("b"));
    expect(g.states.nodeOf("caller-1", "0x1")?.name).toBe("a");
    expect(g.states.nodeOf("caller-2", "0x1")?.name).toBe("b");
    expect(g.states.nodeOf("caller-3", "0x1")).toBeUndefined();
    // a caller's next filter is made where its others are: the names one node gives are all distinct
    expect(g.states.ownerNode("caller-1")?.name).toBe("a");
    expect(g.states.ownerNode("caller-2")?.name).toBe("b");
    // a name another caller made, in any spelling, is not this caller's to use; its own of that name is
    expect(g.states.madeByAnother("caller-3", "0x1")).toBe(true);
    expect(g.states.madeByAnother("caller-3", "0x0001")).toBe(true);
    expect(g.states.madeByAnother("caller-1", "0x1")).toBe(false);
    expect(g.states.madeByAnother("caller-3", "0x2")).toBe(false);
    g.states.made("caller-1", "0xAbC", byName("a"));
    expect(g.states.madeByAnother("caller-2", "0xabc")).toBe(true);
    expect(g.states.nodeOf("caller-1", "0x0abc")?.name).toBe("a");
    // its node out of rotation: forgotten, and polled where the choice sends it
    byName("a").health.probeFailed("refused", "ECONNREFUSED");
    expect(g.states.nodeOf("caller-1", "0x1")).toBeUndefined();
    expect(g.states.nodeOf("caller-1", "0x1")).toBeUndefined();
    expect(g.states.ownerNode("caller-1")).toBeUndefined();
  });

  it("a filter stays its maker's while polled, however many filters another caller makes", () => {
    const { group: g, byName } = group([{ url: "http://a:1", name: "a" }]);
    let now = 1_000_000;
    const clock = vi.spyOn(Date, "now").mockImplementation(() => now);
    try {
      g.states.made("maker", "0x1", byName("a"));
      // another caller making filters by the thousands drops its own names only
      for (let i = 2; i < 30_000; i++) g.states.made("flooder", `0x${i.toString(16)}`, byName("a"));
      expect(g.states.madeByAnother("flooder", "0x1")).toBe(true);
      // polled every 9 minutes (over a WebSocket or in a batch, which check it as this does), it stays its
      // maker's past the 10 minutes a name is kept unused
      for (let minute = 9; minute <= 45; minute += 9) {
        now += 9 * 60_000;
        expect(g.states.madeByAnother("maker", "0x1"), `minute ${minute}`).toBe(false);
        expect(g.states.madeByAnother("other", "0x1"), `minute ${minute}`).toBe(true);
      }
      // unused for longer, it is known no more, and its name another's to make
      now += 11 * 60_000;
      expect(g.states.madeByAnother("other", "0x1")).toBe(false);
    } finally {
      clock.mockRestore();
    }
  });

  it("a new connection opens on a node at the head the label served, else on the highest, without waiting", () => {
    const { group: g, byName } = group([
      { url: "http://a:1", name: "a" },
      { url: "http://b:1", name: "b" },
      { url: "http://c:1", name: "c" },
    ]);
    for (const [name, head] of [
      ["a", 100],
      ["b", 101],
      ["c", 101],
    ] as const) {
      byName(name).health.probed(head, 1);
      g.judgeProbe(byName(name));
    }
    g.served.raise(101);
    // the nodes at the served head first, in turn; the one behind only after them
    const firsts = Array.from({ length: 6 }, () => g.forConnection()[0]?.name);
    expect(new Set(firsts)).toEqual(new Set(["b", "c"]));
    expect(g.forConnection().map((m) => m.name)[2]).toBe("a");
    // a head served that no node has reached yet (another instance's, say): every node, the highest first
    g.served.raise(102);
    expect(g.forConnection().map((m) => m.name)[2]).toBe("a");
    expect(g.served.height).toBe(102);
  });

  it("a fallback a block ahead of the primaries does not make the head the label serves", () => {
    const { group: g, byName } = group([
      { url: "http://a:1", name: "a" },
      { url: "http://b:1", name: "b" },
      { url: "http://f:1", name: "f", tier: "fallback" },
    ]);
    for (const [name, head] of [
      ["a", 100],
      ["b", 100],
      ["f", 101],
    ] as const) {
      byName(name).health.probed(head, 1);
      g.judgeProbe(byName(name));
    }
    // its head is not the label's while primaries serve: reads at the head go to them
    expect(g.served.height).toBe(100);
    expect(g.choose(false, 100).map((m) => m.name)).toEqual(expect.arrayContaining(["a", "b"]));
    expect(g.choose(false, 100)[2]?.name).toBe("f");
    // a head that only the fallback has (it served it while the primaries were out) is still served: the
    // head a caller sees never goes back
    g.served.raise(101);
    expect(g.choose(false, 101).map((m) => m.name)).toEqual(["f"]);
    // with no primary in rotation, the fallback serves, its head with it
    for (const name of ["a", "b"]) byName(name).health.probeFailed("refused", "ECONNREFUSED");
    byName("f").health.probed(102, 1);
    g.judgeProbe(byName("f"));
    expect(g.served.height).toBe(102);
  });

  it("a new connection: primaries before fallbacks, at the served head first, every node listed to try", () => {
    const { group: g, byName } = group([
      { url: "http://a:1", name: "a" },
      { url: "http://b:1", name: "b" },
      { url: "http://f:1", name: "f", tier: "fallback" },
    ]);
    for (const [name, head] of [
      ["a", 101],
      ["b", 100],
      ["f", 101],
    ] as const) {
      byName(name).health.probed(head, 1);
      g.judgeProbe(byName(name));
    }
    // the node at the head first; the one behind next, should a's socket not open; the fallback last
    expect(g.forConnection().map((m) => m.name)).toEqual(["a", "b", "f"]);
    byName("a").health.probeFailed("refused", "ECONNREFUSED");
    expect(g.forConnection().map((m) => m.name)).toEqual(["b", "f"]);
    // none in rotation: the least bad first, as a read would take them, not the dead node at the head
    byName("b").health.probed(90, 1);
    g.judgeProbe(byName("b"));
    byName("f").health.probeFailed("refused", "ECONNREFUSED");
    expect(byName("b").health.state).toBe("lagging");
    expect(g.forConnection()[0]?.name).toBe("b");
  });

  it("a failing node's lag grows as the others move on, from its last known head", () => {
    const { group: g, byName } = group([
      { url: "http://a:1", name: "a" },
      { url: "http://b:1", name: "b" },
    ]);
    for (const name of ["a", "b"]) {
      byName(name).health.probed(100, 1);
      g.judgeProbe(byName(name));
    }
    byName("a").health.probeFailed("refused", "ECONNREFUSED");
    for (const head of [105, 113]) {
      byName("b").health.probed(head, 1);
      g.judgeProbe(byName("b"));
    }
    expect(byName("a").health).toMatchObject({ state: "failing", lagBlocks: 13 });
  });
});
