import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { loadConfig } from "../../src/config/load.js";
import { type RunningGateway, rpcBody, startGateway, TEST_KEYS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// docs/plans.md, "Key settings" (for a key of the deployment config, `keys[].settings`): "A scheme is
// optional ... The scheme's own port (:443 for https) is kept as no port, so such an entry also matches any
// port"; "an empty list clears it"; docs/configuration.md: a static key's settings are checked at load
// (config/load.ts runs checkedSettings). The loader checks them with checkedSettings, which accepts an entry
// by its normalised form (lower case, no trailing slash, no :443, empty lists dropped), but throws that
// form away: StaticKeyStore compiles the file's raw entries (keys/static-store.ts KeyRules.of(entry.settings)),
// and KeyRules' own pattern (lower case only) reads none of them. Each key below was accepted at load and
// then refuses the very calls its owner allowed.

const KEY = {
  capitals: "FNcapitals00000000000000000000",
  slash: "FNslashed000000000000000000000",
  port: "FNportkey000000000000000000000",
  empty: "FNemptyls000000000000000000000",
} as const;

const YAML = `keys:
  - key: ${KEY.capitals}
    networks: "*"
    settings: { origins: ["https://App.Example.com"] }
  - key: ${KEY.slash}
    networks: "*"
    settings: { origins: ["https://app.example.com/"] }
  - key: ${KEY.port}
    networks: "*"
    settings: { origins: ["https://app.example.com:443"] }
  - key: ${KEY.empty}
    networks: "*"
    settings: { ips: [], methods: [] }
`;

describe("a static key's settings as the deployment file writes them", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};

  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), "static-key-settings-")), "gateway.yaml");
    writeFileSync(file, YAML);
    const { keys } = loadConfig(endpointsByLabel, { GATEWAY_CONFIG: file });
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    restore = resolveTestHosts();
    gw = await startGateway({ upstreams: { eth: [{ url: node.url }] }, keys: [...TEST_KEYS, ...keys] });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await node?.close();
  });

  it("serves the origins and calls each entry allows, as an account key's saved settings do", async () => {
    const status = async (key: string, origin?: string) =>
      (
        await gw.call("eth", `/${key}`, {
          body: rpcBody("eth_blockNumber"),
          headers: origin === undefined ? {} : { origin },
        })
      ).status;
    const statuses = {
      capitals: await status(KEY.capitals, "https://app.example.com"),
      slash: await status(KEY.slash, "https://app.example.com"),
      port: await status(KEY.port, "https://app.example.com:8443"),
      empty: await status(KEY.empty),
    };
    expect(statuses).toEqual({ capitals: 200, slash: 200, port: 200, empty: 200 });
  });
});
