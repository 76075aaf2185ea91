import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { UpstreamSpec } from "../../src/config/types.js";
import { UpstreamTable } from "../../src/upstream/upstreams.js";

function group(specs: readonly UpstreamSpec[]) {
  const table = new UpstreamTable(
    { upstreams: { eth: specs }, limits: DEFAULT_LIMITS, health: DEFAULT_HEALTH },
    endpointsByLabel,
    () => ({}) as never,
    () => {},
  );
  const found = table.group("eth", "/");
  if (found === undefined) throw new Error("no group");
  const byName = (name: string) => found.members.find((m) => m.name === name) ?? (undefined as never);
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

  it("tries every in-rotation node, fallbacks after primaries; lagging nodes only when none is in rotation; never a failing or cordoned one", () => {
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
    expect(g.choose().map((u) => u.name)).toEqual(["c"]); // the least bad rather than none
    byName("c").health.probeFailed("timeout");
    expect(g.choose()).toEqual([]); // every upstream down
  });
});
