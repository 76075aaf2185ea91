import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";

// A filter's logs (eth_getFilterLogs) are its whole range scanned by its node, as eth_getLogs scans one:
// every interface that prices a log query prices them alike (docs/compute-units.md). A poll of its changes
// (eth_getFilterChanges) scans only the blocks since the last poll, and stays below.

describe("a filter's logs cost what a log query costs, its changes less", () => {
  it("on every mount that prices eth_getLogs (ethereum and TRON's /jsonrpc interfaces)", () => {
    const seen = new Set<string>();
    for (const endpoint of endpointsByLabel.values())
      for (const mount of endpoint.mounts) {
        const { methods, default: fallback } = mount.policy.computeUnits;
        const logs = methods.get("eth_getLogs");
        if (logs === undefined) continue;
        seen.add(mount.policy.id);
        const where = `${endpoint.label} ${mount.path}`;
        expect(methods.get("eth_getFilterLogs"), where).toBe(logs);
        expect(methods.get("eth_getFilterChanges") ?? fallback, where).toBeLessThan(logs);
      }
    expect([...seen].sort()).toEqual(expect.arrayContaining(["tron-jsonrpc"]));
    expect([...seen].some((id) => id.startsWith("ethereum"))).toBe(true);
  });
});
