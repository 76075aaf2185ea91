import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CONFIG } from "../../src/config/defaults.js";
import { ConfigError, loadConfig } from "../../src/config/load.js";
import { DashboardFiles } from "../../src/control/dashboard/serve.js";
import { ROOT } from "../registry/helpers.js";

const dir = mkdtempSync(join(tmpdir(), "gateway-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
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
      GATEWAY_ACCOUNTS_HOST: "10.0.0.21",
      GATEWAY_SHARED_LIMITS_REDIS: "redis://:secret@redis.internal:6379",
      GATEWAY_OPERATOR_HOST: "10.0.0.21",
    });
    expect(config.accounts?.database).toBe("postgres://gateway:secret@db.internal:5432/gateway");
    expect(config.accounts?.listen.host).toBe("10.0.0.21");
    // each host's operator API on its private address, where the balancer and the scraper reach it
    expect(config.operator?.listen).toEqual({ host: "10.0.0.21", port: 8082 });
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

  it("a support section that gives its e-mail alone keeps the default dedicated-node link", () => {
    const path = file("support.yaml", 'support: { email: "help@example.org" }\n');
    const config = loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path });
    expect(config.support).toEqual({
      email: "help@example.org",
      dedicatedNodeUrl: DEFAULT_CONFIG.support.dedicatedNodeUrl,
    });
    // the dashboard's page not found is written from it as the control plane starts: without the link
    // that start failed (a TypeError), and the footer of every other page read "undefined"
    expect(() => new DashboardFiles(config.support)).not.toThrow();
  });

  it("says every problem at once: a label the registry lacks beside a value the schema refuses", () => {
    const path = file("both.yaml", "upstreams:\n  eth: [ftp://a:1]\n  nope: [http://127.0.0.1:1]\n");
    let message = "";
    try {
      loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('/upstreams/eth/0 must match pattern "^https?://"');
    expect(message).toContain('both.yaml:3:3: upstreams: "nope" is not a label of the registry');
  });

  it("a YAML syntax error is told once at its line, as the reader wrote it, without a dangling colon", () => {
    let message = "";
    try {
      loadConfig(endpointsByLabel, { GATEWAY_CONFIG: file("twice.yaml", "listen: {}\nlisten: {}\n") });
    } catch (error) {
      message = (error as Error).message;
    }
    // the yaml reader's "Map keys must be unique at line 2, column 1:" (its code frame followed the colon)
    expect(message).toBe(`${join(dir, "twice.yaml")}:2:1: Map keys must be unique`);
  });

  it.each([
    ["empty", ""],
    ["only comments", "# rewritten by the deploy tool\n"],
    ["null", "null\n"],
  ])("a file that holds no config (%s) is refused, where {} means the defaults", (_, text) => {
    expect(() => loadConfig(endpointsByLabel, { GATEWAY_CONFIG: file("blank.yaml", text) })).toThrow(
      /blank\.yaml: the file holds no config/,
    );
    expect(
      loadConfig(endpointsByLabel, { GATEWAY_CONFIG: file("braces.yaml", "{}\n") }).listen,
    ).toBeDefined();
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

  // Two keys of one provider share an origin and a masked path: the variable has no way to name them, so
  // they are told apart by their place in it, the first as the others.
  it("two URLs of one provider in a variable are told apart by number, not refused", () => {
    const one = "https://eth-mainnet.provider.io/v2/AbC123xyzSecretKeyOne";
    const two = "https://eth-mainnet.provider.io/v2/AbC123xyzSecretKeyTwo";
    const config = loadConfig(endpointsByLabel, {
      GATEWAY_CONFIG: file("empty-2.yaml", "{}\n"),
      GATEWAY_UPSTREAM_ETH: `${one},${two},http://10.0.0.2:8545`,
    });
    expect(config.upstreams.eth).toEqual([
      { url: one, name: "https://eth-mainnet.provider.io/v2/key-1" },
      { url: two, name: "https://eth-mainnet.provider.io/v2/key-2" },
      "http://10.0.0.2:8545",
    ]);
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
    [
      "an upstream list for a mount the label does not have",
      "upstreams: { dot: { /rpcx: [http://127.0.0.1:1] } }\n",
      'upstreams.dot: "/rpcx" is not a mount of dot (its mounts: /)',
    ],
    [
      "a key for a network the registry does not have",
      "keys: [{ key: FNabcdefabcdefabcdefabcdefabcd, networks: [eth, nope] }]\n",
      'keys[0].networks: "nope" is not a network of the registry',
    ],
    [
      "two keys that begin alike: one id, one rate, one quota",
      'keys: [{ key: FNcustomer-alice-000000, networks: "*" }, { key: FNcustomer-bob-00000000, networks: "*" }]\n',
      "keys[1].key begins with the same 8 characters as keys[0].key",
    ],
    [
      "a hedge's floor above its ceiling",
      "limits: { upstream: { hedgeMinMs: 5000, hedgeMaxMs: 100 } }\n",
      "limits.upstream.hedgeMinMs (5000) is above hedgeMaxMs (100)",
    ],
    [
      "a range split above its refusal",
      "blockRanges: { eth: { eth_getLogs: { splitAbove: 5000, refuseAbove: 10 } } }\n",
      "splitAbove (5000) is above refuseAbove (10)",
    ],
    [
      "range limits for a method that takes no range",
      "blockRanges: { eth: { eth_call: { splitAbove: 10 } } }\n",
      "blockRanges.eth: eth_call takes no block range",
    ],
  ])("refuses %s with a message naming the file", (_, text, message) => {
    const path = file("bad.yaml", text);
    expect(() => loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path })).toThrow(ConfigError);
    expect(() => loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path })).toThrow(message);
  });

  it.each([
    [
      "an upstream that is not a URL",
      "upstreams: { eth: [ftp://x] }\n",
      '/upstreams/eth/0 must match pattern "^https?://"',
    ],
    [
      "a label with no upstream",
      "upstreams: { eth: [] }\n",
      "/upstreams/eth must NOT have fewer than 1 items",
    ],
    [
      "a mount with no upstream",
      "upstreams: { trx: { /jsonrpc: [] } }\n",
      "/upstreams/trx/~1jsonrpc must NOT have fewer than 1 items",
    ],
    // a value of none of the allowed forms: the forms it may have, not ajv's "must match a schema in anyOf"
    // or one form's "must be equal to constant"
    [
      "a label's one URL not in a list",
      "upstreams: { eth: http://a }\n",
      "/upstreams/eth must be array or object",
    ],
    [
      "an upstream that is a number",
      "upstreams: { eth: [3] }\n",
      "/upstreams/eth/0 must be string or object",
    ],
    [
      "a key's one network not in a list",
      "keys: [{ key: FNabcdefabcdefabcdefabcdefabcd, networks: eth }]\n",
      '/keys/0/networks must be "*" or array',
    ],
    [
      "a key's network that is not a name",
      "keys: [{ key: FNabcdefabcdefabcdefabcdefabcd, networks: [3] }]\n",
      "/keys/0/networks/0 must be string",
    ],
    ["an operator section that is a port", "operator: 8082\n", "/operator must be null or object"],
  ])("says %s once, in the words of the form the value has", (_, text, message) => {
    const path = file("one-problem.yaml", text);
    let problems = "";
    try {
      loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path });
    } catch (error) {
      problems = (error as Error).message;
    }
    expect(problems).toContain(message);
    // one line: not each allowed form's complaint, nor "must match a schema in anyOf"
    expect(problems.split("\n")).toHaveLength(1);
  });
});

describe("settings from the environment, checked with the file as one config", () => {
  const deployment = file(
    "env-base.yaml",
    [
      "domain: gw.test",
      "listen: { host: 127.0.0.1, port: 9100 }",
      "accounts:",
      "  database: /tmp/gw.sqlite",
      "  listen: { host: 127.0.0.1, port: 9101 }",
      "  mail: { from: gw@example.com, outbox: /tmp/outbox }",
    ].join("\n"),
  );
  /** The message of the ConfigError that `env` over the file makes; fails on any other outcome. */
  function refusal(env: NodeJS.ProcessEnv): string {
    try {
      loadConfig(endpointsByLabel, { GATEWAY_CONFIG: deployment, ...env });
    } catch (error) {
      if (error instanceof ConfigError) return error.message;
      throw error;
    }
    throw new Error(`accepted: ${JSON.stringify(env)}`);
  }

  it.each([
    ["GATEWAY_UPSTREAM_ETH", "not-a-url", 'upstreams/eth/0 must match pattern "^https?://"'],
    ["GATEWAY_UPSTREAM_ETH", "http://", "upstreams.eth[0] is not a URL"],
    ["GATEWAY_UPSTREAM_ETH", "http://127.0.0.1:1,,http://127.0.0.1:2", "/upstreams/eth/1 must match pattern"],
    [
      "GATEWAY_UPSTREAM_ETHEREUM",
      "http://127.0.0.1:1",
      'upstreams: "ethereum" is not a label of the registry',
    ],
    [
      "GATEWAY_LOG_LEVEL",
      "verbose",
      "/log/level must be equal to one of the allowed values: debug, info, warn, error, silent",
    ],
    ["GATEWAY_PORT", "80a", "/listen/port must be integer"],
    ["GATEWAY_PORT", "70000", "/listen/port must be <= 65535"],
    ["GATEWAY_OPERATOR_PORT", "-1", "/operator/listen/port must be >= 0"],
    ["GATEWAY_WORKERS", "lots", "/workers must be integer"],
    ["GATEWAY_DOMAIN", "not a host", "/domain must match pattern"],
    ["GATEWAY_SHARED_LIMITS_REDIS", "127.0.0.1:6379", '/sharedLimits/redis must match pattern "^rediss?://"'],
    // ioredis SELECTs NaN on such a URL, and the proxy died of the reply once it served
    [
      "GATEWAY_SHARED_LIMITS_REDIS",
      "redis://:hunter2@redis.internal:6379/staging",
      "sharedLimits.redis: the path after the address is a database index, a whole number (redis://host:6379/2), or nothing",
    ],
    ["GATEWAY_SHARED_LIMITS_REDIS", "redis://:hunter2@redis.internal:bad", "sharedLimits.redis is not a URL"],
    ["GATEWAY_ACCOUNTS_PORT", "eighty", "/accounts/listen/port must be integer"],
    // a mistyped URL would otherwise be made into a SQLite file of that name
    ["GATEWAY_ACCOUNTS_DB", "postgress://postgres@db/gateway", 'accounts.database starts "postgress:"'],
    ["GATEWAY_SMTP_URL", "http://user:hunter2@mail.example.com", "must be smtp://[user:pass@]host[:port]"],
  ])("%s=%s is refused, naming the variable rather than a line of the file", (variable, value, message) => {
    const text = refusal({ [variable]: value });
    expect(text).toContain(message);
    for (const line of text.split("\n")) expect(line.startsWith(`${variable}: `), line).toBe(true);
    expect(text).not.toContain(deployment);
    // a variable's value may hold a password: a problem never repeats it
    expect(text).not.toContain("hunter2");
  });

  it("an account variable where the config has no accounts section is refused, not ignored", () => {
    const path = file("env-no-accounts.yaml", "domain: gw.test\n");
    for (const [variable, value] of [
      ["GATEWAY_ACCOUNTS_DB", "postgres://gateway:hunter2@db.internal/gateway"],
      ["GATEWAY_ACCOUNTS_HOST", "10.0.0.21"],
      ["GATEWAY_ACCOUNTS_PORT", "9200"],
      ["GATEWAY_OUTBOX", "/var/mail/gateway"],
      ["GATEWAY_SMTP_URL", "smtp://ops:hunter2@mail.example.com"],
    ] as const) {
      let message = "";
      try {
        loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path, [variable]: value });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toBe(`${variable}: the deployment config has no accounts section for it to fill in`);
    }
    // empty counts as unset, as for every variable
    expect(loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path, GATEWAY_ACCOUNTS_DB: "" }).accounts).toBe(
      undefined,
    );
  });

  it("a problem of the file is still reported at its line, beside a variable's", () => {
    const path = file("env-file-problem.yaml", "domain: gw.test\nlimits: { maxBatch: many }\n");
    expect(() =>
      loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path, GATEWAY_LOG_LEVEL: "loud", GATEWAY_PORT: "9000" }),
    ).toThrow(
      new RegExp(
        `^${path}:2:21: /limits/maxBatch must be integer\\nGATEWAY_LOG_LEVEL: /log/level must be`,
        "m",
      ),
    );
  });

  it("GATEWAY_SHARED_LIMITS_REDIS fills in a file's sharedLimits section that has no Redis URL", () => {
    const path = file("env-shared.yaml", "sharedLimits: { leaseMs: 50 }\n");
    expect(() => loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path })).toThrow(
      `${path}:1:15: /sharedLimits must have required property 'redis'`,
    );
    const config = loadConfig(endpointsByLabel, {
      GATEWAY_CONFIG: path,
      GATEWAY_SHARED_LIMITS_REDIS: "redis://:secret@127.0.0.1:6379",
    });
    expect(config.sharedLimits).toEqual({
      redis: "redis://:secret@127.0.0.1:6379",
      leaseMs: 50,
      fallbackShare: 1,
    });
    // the operator CLI and the control plane never use Redis: they read the same file without its secret
    const forCli = loadConfig(endpointsByLabel, { GATEWAY_CONFIG: path }, ["sharedLimits", "tracing"]);
    expect(forCli.sharedLimits).toBeUndefined();
  });

  it("fills in the other sections field by field, and an empty variable counts as unset", () => {
    const config = loadConfig(endpointsByLabel, {
      GATEWAY_CONFIG: deployment,
      GATEWAY_PORT: "",
      GATEWAY_OPERATOR_PORT: "0",
      GATEWAY_LOG_LEVEL: "warn",
      GATEWAY_WORKERS: "3",
      GATEWAY_ACCOUNTS_PORT: "9200",
      GATEWAY_SMTP_URL: "smtps://ops%40example.com:p%40ss@mail.example.com",
    });
    expect(config.listen).toEqual({ host: "127.0.0.1", port: 9100 });
    expect(config.operator?.listen).toEqual({ host: "127.0.0.1", port: 0 });
    expect(config.log).toEqual({ level: "warn", access: true });
    expect(config.workers).toBe(3);
    expect(config.accounts?.listen).toEqual({ host: "127.0.0.1", port: 9200 });
    expect(config.accounts?.mail.smtp).toEqual({
      host: "mail.example.com",
      port: 465,
      secure: true,
      user: "ops@example.com",
      pass: "p@ss",
    });
  });

  it("whatever a variable holds, the outcome is a config or a ConfigError, never another exception", () => {
    const variables = [
      "GATEWAY_UPSTREAM_ETH",
      "GATEWAY_UPSTREAM_ETH_ARCHIVE",
      "GATEWAY_HOST",
      "GATEWAY_PORT",
      "GATEWAY_DOMAIN",
      "GATEWAY_LOG_LEVEL",
      "GATEWAY_OPERATOR_PORT",
      "GATEWAY_WORKERS",
      "GATEWAY_SHARED_LIMITS_REDIS",
      "GATEWAY_ACCOUNTS_DB",
      "GATEWAY_ACCOUNTS_HOST",
      "GATEWAY_ACCOUNTS_PORT",
      "GATEWAY_OUTBOX",
      "GATEWAY_SMTP_URL",
    ];
    const value = fc.oneof(
      fc.string(),
      fc.webUrl(),
      fc.constantFrom("http://", "smtp://", "smtp://u:%@h", "redis://", "auto", "-1", "1e9", " 80 ", "0x50"),
    );
    fc.assert(
      fc.property(fc.constantFrom(...variables), value, (variable, text) => {
        try {
          loadConfig(endpointsByLabel, { GATEWAY_CONFIG: deployment, [variable]: text });
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigError);
        }
      }),
      { numRuns: 300 },
    );
  });
});
