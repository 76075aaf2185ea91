import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { ConfigError, loadConfig } from "../../src/config/load.js";
import type { Endpoint } from "../../src/registry/types.js";
import { cacheFor } from "../../src/upstream/upstreams.js";

// The cache's settings (docs/cache.md, "Settings"): the deployment's, each label's over them, and the
// head's age from the network's block time.

const dir = mkdtempSync(join(tmpdir(), "gw-cache-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function load(yaml: string) {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, yaml);
  return loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path });
}

const eth = endpointsByLabel.get("eth") as Endpoint;
const btc = endpointsByLabel.get("btc") as Endpoint;

describe("cache settings", () => {
  it("are on by default, 64 MiB a label, and an answer read at the head lives at most half a block, at most 2 s", () => {
    const config = load("upstreams: {}\n");
    expect(config.cache).toMatchObject({ enabled: true, maxBytes: 64 * 1024 * 1024, headRelative: true });
    expect(cacheFor(config.cache, eth)?.headMaxAgeMs).toBe(
      Math.min(2_000, (eth.blockTimeSeconds * 1000) / 2),
    );
    expect(cacheFor(config.cache, btc)?.headMaxAgeMs).toBe(2_000);
  });

  it("a label's own settings win over the deployment's, and a label may turn its cache off", () => {
    const config = load(
      "cache: { maxBytes: 1000000, headMaxAgeMs: 300, labels: { eth: { enabled: false }, btc: { maxBytes: 5000, headRelative: false } } }\n",
    );
    expect(cacheFor(config.cache, eth)).toBeUndefined();
    expect(cacheFor(config.cache, btc)).toMatchObject({
      maxBytes: 5000,
      headRelative: false,
      headMaxAgeMs: 300,
    });
    expect(cacheFor(config.cache, endpointsByLabel.get("dot"))).toMatchObject({ maxBytes: 1_000_000 });
  });

  it("refuses a label the registry does not have, and a field it does not know, naming where", () => {
    expect(() => load("cache: { labels: { nosuchchain: { enabled: false } } }\n")).toThrow(ConfigError);
    expect(() => load("cache: { labels: { nosuchchain: { enabled: false } } }\n")).toThrow(
      /cache\.labels.*nosuchchain/,
    );
    expect(() => load("cache: { maxbytes: 5 }\n")).toThrow(/maxbytes/);
  });
});
