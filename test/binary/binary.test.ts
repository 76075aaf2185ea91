import { execFile } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { networkCodes, registryStamp } from "../../generated/endpoints.js";
import { DEFAULT_ACCOUNTS } from "../../src/config/defaults.js";
import { createControlPlane } from "../../src/control/plane.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import {
  type BinaryFolder,
  binaryInEmptyFolder,
  builtBinary,
  type RunningBinary,
  startBinary,
  stopBinary,
} from "../support/binary.js";
import { eventually } from "../support/eventually.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// The proxy as one executable file: built once, copied alone into an empty folder, and run there with a
// PATH that holds no `node` and no node_modules anywhere near it.

const run = promisify(execFile);
const STATIC_KEY = "FNstatic0000000000000000000000001";
let folder: BinaryFolder;
let dir = "";
let bin = "";
let binary = "";
let env: NodeJS.ProcessEnv = {};

beforeAll(async () => {
  folder = await binaryInEmptyFolder();
  ({ dir, bin, binary, env } = folder);
}, 120_000);
// after every describe's own afterAll, which stops what it started from the folder
afterAll(() => folder?.remove());

describe("dist/node-gateway, alone in an empty folder", () => {
  let node: LoopbackNode;
  let accountKey = "";
  let config = "";
  let proxy: RunningBinary | undefined;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
    // The control plane (not in the binary) creates the embedded SQLite store and issues a key in it.
    const store = join(dir, "store.sqlite");
    const accounts = {
      ...DEFAULT_ACCOUNTS,
      database: store,
      listen: { host: "127.0.0.1", port: 0 },
      mail: { from: "gw@example.com", outbox: join(dir, "outbox") },
    };
    const control = await createControlPlane({
      config: accounts,
      networks: new Set(networkCodes),
      trustedProxies: [],
      logger: createLogger("silent"),
    });
    const account = await control.service.admin.createAccount("binary@example.com");
    accountKey = (await control.service.keys.issue(account.id, { networks: ["eth"], plan: "shared" })).key;
    await control.close();
    config = join(dir, "deployment.yaml");
    writeFileSync(
      config,
      [
        "domain: gw.test",
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: null",
        `upstreams: { eth: ["${node.url}"] }`,
        `keys: [{ key: ${STATIC_KEY}, networks: "*" }]`,
        "log: { level: info, access: false }",
        "accounts:",
        `  database: ${store}`,
        "  listen: { host: 127.0.0.1, port: 0 }",
        `  mail: { from: gw@example.com, outbox: ${join(dir, "outbox")} }`,
      ].join("\n"),
    );
  });
  afterAll(async () => {
    await stopBinary(proxy);
    await node?.close();
  });

  it("is one file, runs with no node on the PATH, and says its version and the registry's stamp", async () => {
    expect(statSync(binary).size).toBeGreaterThan(50 * 1024 * 1024);
    const { stdout } = await run(binary, ["--version"], { cwd: bin, env });
    expect(stdout).toMatch(/^node-gateway \d+\.\d+\.\d+ \(registry sha256:[0-9a-f]{64}/);
    expect(stdout).toContain(registryStamp);
    await expect(run("node", ["--version"], { env })).rejects.toThrow(/ENOENT/);
  });

  it("embeds an ASCII script, which V8 keeps at one byte per character", async () => {
    const script = readFileSync(`${await builtBinary()}.parts/gateway.cjs`, "utf8");
    expect(script.length).toBeGreaterThan(100_000);
    expect(script.match(/[\u0080-\uffff].{0,40}/)?.[0]).toBeUndefined();
  });

  it("serves a call with a key from the embedded SQLite store and with a static key", async () => {
    const started = await startBinary(folder, ["--config", config]);
    proxy = started;
    for (const key of [accountKey, STATIC_KEY]) {
      const answer = await request(`http://127.0.0.1:${started.port}/${key}/`, {
        method: "POST",
        headers: { host: "eth.gw.test", "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
      });
      expect(answer.statusCode).toBe(200);
      expect(await answer.body.json()).toEqual({ jsonrpc: "2.0", id: 1, result: "0x2a" });
    }
    expect(started.logs.join("\n")).not.toContain("Warning");
  });

  it("--check-config passes a valid file and refuses a broken one, naming the line", async () => {
    const ok = await run(binary, ["--check-config", "--config", config], { cwd: bin, env });
    expect(ok.stdout).toContain("valid");
    const broken = join(dir, "broken.yaml");
    writeFileSync(
      broken,
      [
        "domain: gw.test",
        "upstreams:",
        "  eth: [http://127.0.0.1:1]",
        "  ethereum: []",
        "limits: { maxBatch: lots }",
      ].join("\n"),
    );
    const refused = await run(binary, ["--check-config", "--config", broken], { cwd: bin, env }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect((refused as { code: number }).code).toBe(2);
    expect((refused as { stderr: string }).stderr).toContain(`${broken}:5:`);
    expect((refused as { stderr: string }).stderr).toContain("maxBatch must be integer");
    const syntax = join(dir, "syntax.yaml");
    writeFileSync(syntax, "domain: gw.test\nlisten: { host: 127.0.0.1\n");
    const bad = await run(binary, ["--check-config", "--config", syntax], { cwd: bin, env }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect((bad as { code: number }).code).toBe(2);
    expect((bad as { stderr: string }).stderr).toMatch(new RegExp(`${syntax}:\\d+:\\d+: `));
  });

  it("an unknown flag is a usage error, exit 2; --help lists the flags, signals and exit codes", async () => {
    const wrong = await run(binary, ["--frobnicate"], { cwd: bin, env }).catch((e: { code: number }) => e);
    expect((wrong as { code: number }).code).toBe(2);
    const { stdout } = await run(binary, ["--help"], { cwd: bin, env });
    for (const word of ["--config", "--check-config", "--version", "SIGHUP", "SIGTERM", "exit codes"])
      expect(stdout).toContain(word);
  });
});

/** An eth_blockNumber call through the proxy at `port` with `key`, on `host`. */
async function blockNumber(
  port: number,
  key: string,
  host: string,
): Promise<{ status: number; json: unknown }> {
  const answer = await request(`http://127.0.0.1:${port}/${key}/`, {
    method: "POST",
    headers: { host, "content-type": "application/json" },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
  });
  return { status: answer.statusCode, json: await answer.body.json() };
}

describe("dist/node-gateway with no config: the embedded default's first run", () => {
  let node: LoopbackNode;
  let proxy: RunningBinary | undefined;
  // Any free ports rather than 8080 and 8082, which the machine may be using; no file, no --config.
  const firstRun = { GATEWAY_PORT: "0", GATEWAY_OPERATOR_PORT: "0" };

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
  });
  afterAll(async () => {
    await stopBinary(proxy);
    await node?.close();
  });

  it("starts, creates its account store, says where and how to issue a first key, and answers its probes", async () => {
    proxy = await startBinary(folder, [], { ...firstRun, GATEWAY_UPSTREAM_ETH: node.url });
    const created = proxy.logs.find((line) => line.includes("account store created"));
    expect(JSON.parse(created ?? "{}")).toMatchObject({
      level: "info",
      database: join(bin, ".data/gateway.sqlite"),
      firstKey: `${binary} admin accounts create --email you@example.com; ${binary} admin keys issue --account 1`,
    });
    const operator = `http://127.0.0.1:${proxy.operatorPort}`;
    const health = await request(`${operator}/healthz`);
    expect(health.statusCode).toBe(200);
    expect(await health.body.json()).toEqual({ status: "alive" });
    await eventually(
      async () => {
        const ready = await request(`${operator}/readyz`);
        await ready.body.dump();
        return ready.statusCode === 200;
      },
      10_000,
      "/readyz answers 200",
    );
    // the commit it was built from, as the bundles name theirs (it read "dev" in every binary)
    const metrics = await (await request(`${operator}/metrics`)).body.text();
    expect(metrics).toMatch(/gateway_build_info\{[^}]*commit="(?!dev")[0-9a-f]{12}"/);
  });

  it("serves a key issued through the binary's own operator CLI, and never logs it", async () => {
    const started = proxy;
    if (started === undefined) throw new Error("the proxy did not start");
    const admin = (...args: string[]) => run(binary, ["admin", ...args], { cwd: bin, env });
    expect((await admin("accounts", "create", "--email", "first@example.com")).stdout).toMatch(
      /^account 1 {2}first@example.com {2}active/,
    );
    const issued = await admin("keys", "issue", "--account", "1", "--network", "eth");
    const key = /\n(FN[A-Za-z0-9]{32})\n/.exec(issued.stdout)?.[1] ?? "";
    expect(key).not.toBe("");
    let answer = { status: 0, json: undefined as unknown };
    await eventually(
      async () => {
        answer = await blockNumber(started.port, key, "eth.localhost");
        return answer.status === 200;
      },
      5_000,
      "the proxy serves the key the CLI issued",
    );
    expect(answer.json).toEqual({ jsonrpc: "2.0", id: 1, result: "0x2a" });
    expect(started.logs.join("\n")).not.toContain(key);
  });

  it("a second run finds the store and creates nothing", async () => {
    proxy?.child.kill("SIGTERM");
    expect(await proxy?.exited).toBe(0);
    proxy = await startBinary(folder, [], firstRun);
    expect(proxy.logs.some((line) => line.includes("account store created"))).toBe(false);
  });
});

describe("node-gateway admin: the operator CLI inside the binary", () => {
  type Failure = { code: number; stdout: string; stderr: string };
  const fail = (args: readonly string[], extra: NodeJS.ProcessEnv = {}) =>
    run(binary, ["admin", ...args], { cwd: bin, env: { ...env, ...extra } }).then(
      () => {
        throw new Error(`admin ${args.join(" ")} succeeded`);
      },
      (error: Failure) => error,
    );

  it("against a PostgreSQL that is down: one line with STORE_UNAVAILABLE, exit 1, no stack, no password", async () => {
    const closed = await freePort();
    const failed = await fail(["keys", "list", "--account", "1"], {
      GATEWAY_ACCOUNTS_DB: `postgres://gateway:hunter2@127.0.0.1:${closed}/gateway`,
    });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toBe("");
    expect(failed.stderr).toMatch(
      /^error STORE_UNAVAILABLE: The account store cannot be reached; try again shortly \(reason: .*ECONNREFUSED.*\)\n$/,
    );
    expect(failed.stderr).not.toContain("hunter2");
  });

  it("a command line it cannot read is USAGE, exit 2, one line; --help lists the exit statuses", async () => {
    const wrong = await fail(["keys", "list", "--frobnicate"]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/^error USAGE: unknown flag --frobnicate; --help lists the commands\n$/);
    const { stdout } = await run(binary, ["admin", "--help"], { cwd: bin, env });
    for (const words of [
      "node-gateway admin <command>",
      "keys issue",
      "STORE_UNAVAILABLE",
      "  2  nothing was run",
    ])
      expect(stdout).toContain(words);
  });
});
