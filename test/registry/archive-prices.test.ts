import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";

// docs/plans.md: "An archive node's answer costs the interface's archive factor (2×)". An interface left
// without one (toncenter's and Ogmios's were) sold an archive label's answers at a full node's price.

describe("an archive node's answer costs more than a full node's", () => {
  it("on every mount of every archive label", () => {
    const archives = [...endpointsByLabel.values()].filter((e) => e.nodeClass === "archive");
    expect(archives.length).toBeGreaterThan(0);
    for (const endpoint of archives)
      for (const mount of endpoint.mounts)
        expect(mount.policy.computeUnits.archive, `${endpoint.label} ${mount.path}`).toBe(2);
  });
});
