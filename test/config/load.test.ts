import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { ConfigError, loadConfig } from "../../src/config/load.js";
import { ROOT } from "../registry/helpers.js";

const dir = mkdtempSync(join(tmpdir(), "gateway-config-"));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe("the deployment config", () => {
  it("the embedded default starts anvil behind eth and eth-archive and issues a demo key", () => {
    const config = loadConfig(endpointsByLabel, {});
    expect(config.localNodes.map((n) => n.label)).toEqual(["eth", "eth-archive"]);
    expect(config.demoKey).toBe(true);
    expect(config.limits.maxBatch).toBe(100);
  });

  it("deploy/scale-out.yaml, the many-instance example, is a valid deployment; secrets come from the environment", () => {
    const config = loadConfig(endpointsByLabel, {
      GATEWAY_CONFIG: join(ROOT, "deploy/scale-out.yaml"),
      GATEWAY_ACCOUNTS_DB: "postgres://gateway:secret@db.internal:5432/gateway",
      GATEWAY_SHARED_LIMITS_REDIS: "redis://:secret@redis.internal:6379",
    });
    expect(config.accounts?.database).toBe("postgres://gateway:secret@db.internal:5432/gateway");
    expect(config.sharedLimits).toEqual({
      redis: "redis://:secret@redis.internal:6379",
      leaseMs: 100,
      fallbackShare: 0.125,
    });
    expect(config.workers).toBe(2);
  });

  it("shared limits take their defaults besides the Redis URL, and refuse a URL that is not Redis's", () => {
    const config = loadConfig(endpointsByLabel, {
      GATEWAY_CONFIG: file("shared.yaml", 'sharedLimits: { redis: "redis://127.0.0.1:6379" }\n'),
    });
    expect(config.sharedLimits).toEqual({ redis: "redis://127.0.0.1:6379", leaseMs: 100, fallbackShare: 1 });
    expect(() =>
      loadConfig(endpointsByLabel, {
        GATEWAY_CONFIG: file(
          "shared-bad.yaml",
          'sharedLimits: { redis: "127.0.0.1:6379", fallbackShare: 2 }\n',
        ),
      }),
    ).toThrow(/sharedLimits/);
  });

  it("a file's limits merge field by field over the defaults", () => {
    const path = file("limits.yaml", "limits: { maxBatch: 10, upstream: { headersTimeoutMs: 500 } }\n");
    const config = loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path });
    expect(config.limits.maxBatch).toBe(10);
    expect(config.limits.maxBodyBytes).toBe(256 * 1024);
    expect(config.limits.upstream).toMatchObject({ headersTimeoutMs: 500, connectTimeoutMs: 3000 });
    expect(config.localNodes).toEqual([]);
  });

  it("upstreams come from the environment too, where secrets belong", () => {
    const config = loadConfig(endpointsByLabel, {
      GATEWAY_CONFIG: file("empty.yaml", "{}\n"),
      GATEWAY_UPSTREAM_ETH_ARCHIVE: "http://user:secret@10.0.0.1:8545/base, http://10.0.0.2:8545",
      GATEWAY_PORT: "9000",
    });
    expect(config.upstreams["eth-archive"]).toEqual([
      "http://user:secret@10.0.0.1:8545/base",
      "http://10.0.0.2:8545",
    ]);
    expect(config.listen.port).toBe(9000);
  });

  it.each([
    ["an unknown field", "colour: red\n", "config must NOT have additional properties"],
    ["a limit of the wrong type", "limits: { maxBatch: many }\n", "/limits/maxBatch must be integer"],
    ["an upstream that is not a URL", "upstreams: { eth: [ftp://x] }\n", "/upstreams/eth"],
    [
      "an unknown label",
      "upstreams: { ethereum: [http://127.0.0.1:1] }\n",
      'upstreams: "ethereum" is not a label of the registry',
    ],
    [
      "a public host for a label without one",
      "publicHosts: { e.example: eth }\n",
      'publicHosts.e.example: "eth" has no public endpoint',
    ],
  ])("refuses %s with a message naming the file", (_, text, message) => {
    const path = file("bad.yaml", text);
    expect(() => loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path })).toThrow(ConfigError);
    expect(() => loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path })).toThrow(message);
  });
});
