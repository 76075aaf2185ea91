import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { networkCatalog } from "../../src/control/dashboard/catalog.js";

// The dashboard's first calls are registry data: a curl line from each interface's head call and a snippet
// from its `example`. Every network has both, so no page shows a network without a way to start.
describe("the dashboard's first call for every network", () => {
  const catalog = networkCatalog(endpointsByLabel);

  it("lists every network of the registry once", () => {
    expect(catalog.map((n) => n.code).sort()).toEqual(
      [...new Set([...endpointsByLabel.values()].map((e) => e.code))].sort(),
    );
  });

  for (const network of catalog) {
    it(`${network.code}: a curl call and an SDK snippet that takes the endpoint's URL`, () => {
      expect(network.firstCall.method).toMatch(/^(GET|POST)$/);
      if (network.firstCall.method === "POST")
        expect(() => JSON.parse(network.firstCall.body ?? "")).not.toThrow();
      expect(network.example?.sdk.length).toBeGreaterThan(0);
      expect(network.example?.code).toContain("{url}");
    });
  }
});
