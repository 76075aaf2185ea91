import { afterEach, expect, it, vi } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CONFIG } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { printDemo } from "../../src/dev/demo.js";

// `npm start` prints the operator API's URL from `operator.listen.host`: an IPv6 address went in as
// written (`http://::1:8082/upstreams`), a URL no client parses (the admin CLI had the same flaw).

afterEach(() => vi.restoreAllMocks());

it("writes an IPv6 operator address in brackets", () => {
  let printed = "";
  vi.spyOn(process.stdout, "write").mockImplementation((text) => {
    printed += String(text);
    return true;
  });
  const config = { ...DEFAULT_CONFIG, operator: { listen: { host: "::1", port: 8082 } } } as GatewayConfig;
  printDemo({
    config,
    port: 8080,
    key: "FNdemo",
    nodes: [],
    accountsPort: undefined,
    operatorPort: 8082,
    endpoints: endpointsByLabel,
  });
  expect(printed).toContain("http://[::1]:8082/upstreams");
});
