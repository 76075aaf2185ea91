import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { builtBundles } from "../support/bundles.js";
import { killChild, listeningPort } from "../support/child-process.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// The proxy apart from the control plane: its bundle carries nothing of the control plane, and it runs
// alone against the account store that the control plane created, following the store's changes.
/** The run's bundles (support/bundles.ts). */
let OUT = "";
let inputs: Record<string, string[]> = {};

beforeAll(async () => {
  const { dir, metafile } = await builtBundles();
  OUT = dir;
  inputs = Object.fromEntries(
    Object.entries(metafile?.outputs ?? {})
      .filter(([file]) => file.endsWith(".js"))
      .map(([file, output]) => [relative(OUT, join(ROOT, file)), Object.keys(output.inputs)]),
  );
}, 60_000);

describe("the proxy bundle", () => {
  const controlPlane = (input: string) =>
    input.startsWith("src/control/") ||
    input.startsWith("src/dev/") ||
    input.includes("node_modules/nodemailer/");

  it("holds no control-plane module, no demo module and no mailer", () => {
    expect(inputs["gateway.js"]?.length).toBeGreaterThan(20);
    expect(inputs["gateway.js"]?.filter(controlPlane)).toEqual([]);
  });

  it("compiles no schema at run time: the config's validator is generated, so ajv is not in it", () => {
    expect(inputs["gateway.js"]?.filter((input) => input.includes("node_modules/ajv/"))).toEqual([]);
    expect(inputs["gateway.js"]).toContain("generated/config-validator.js");
  });

  it("is ASCII, as is every bundle: V8 then keeps a script's source at one byte per character", () => {
    for (const name of ["gateway", "control-plane", "admin", "demo"]) {
      const text = readFileSync(join(OUT, `${name}.js`), "utf8");
      expect(text.length, name).toBeGreaterThan(100_000);
      expect(text.match(/[\u0080-\uffff].{0,40}/)?.[0], name).toBeUndefined();
    }
  });

  it("while the demo bundle, which runs both, holds them (the check sees what it looks for)", () => {
    expect(inputs["demo.js"]?.filter(controlPlane).length).toBeGreaterThan(5);
  });
});

describe("the proxy alone, against the store the control plane created", () => {
  const dir = mkdtempSync(join(tmpdir(), "split-"));
  const config = join(dir, "deployment.yaml");
  const children: ChildProcess[] = [];
  let node: LoopbackNode;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
    writeFileSync(
      config,
      [
        "domain: gw.test",
        "listen: { host: 127.0.0.1, port: 0 }",
        `upstreams: { eth: ["${node.url}"] }`,
        "log: { level: info, access: false }",
        "accounts:",
        `  database: ${join(dir, "store.sqlite")}`,
        "  listen: { host: 127.0.0.1, port: 0 }",
        `  mail: { from: "gw@example.com", outbox: ${join(dir, "outbox")} }`,
        "  followIntervalMs: 100",
      ].join("\n"),
    );
  });
  afterAll(async () => {
    await Promise.all(children.map((child) => killChild(child)));
    await node?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const env = { ...process.env, GATEWAY_CONFIG: config, GATEWAY_OPERATOR_PORT: "0" };
  const start = (bundle: string) => {
    const child = spawn(process.execPath, [join(OUT, bundle)], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(child);
    return child;
  };
  const admin = (...args: string[]) =>
    new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [join(OUT, "admin.js"), ...args], { cwd: ROOT, env }, (error, out) =>
        error ? reject(error) : resolve(out),
      ),
    );
  const call = async (port: number, key: string) => {
    const answer = await request(`http://127.0.0.1:${port}/${key}/`, {
      method: "POST",
      headers: { host: "eth.gw.test", "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    });
    return { status: answer.statusCode, json: await answer.body.json() };
  };

  it("refuses to start before the store exists, and says why", async () => {
    const proxy = start("gateway.js");
    let err = "";
    proxy.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    const code = await new Promise((resolve) => proxy.once("exit", resolve));
    expect(code).toBe(1);
    expect(err).toMatch(/account store .*store\.sqlite cannot be read/);
  });

  it("serves a key the control plane issued, and refuses it once revoked there", async () => {
    const control = start("control-plane.js");
    await listeningPort(control, "control plane listening");
    const account = /^account (\d+)/.exec(
      await admin("accounts", "create", "--email", "ops@example.com"),
    )?.[1];
    const issued = await admin("keys", "issue", "--account", account ?? "", "--network", "eth");
    const key = /\n(FN[A-Za-z0-9]{32})\n/.exec(issued)?.[1] ?? "";
    const keyId = /^key (\d+)/.exec(issued)?.[1] ?? "";

    const proxy = start("gateway.js");
    const port = await listeningPort(proxy, "gateway listening");
    const served = await call(port, key);
    expect(served.status).toBe(200);
    expect(served.json).toEqual({ jsonrpc: "2.0", id: 1, result: "0x2a" });

    await admin("keys", "revoke", "--key", keyId);
    const revoked = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revoked < 2000) {
      status = (await call(port, key)).status;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(status).toBe(401);
    // the proxy writes nothing of the store but its usage counts: the control plane keeps serving
    expect(control.exitCode).toBe(null);
  });
});

describe("the proxy alone on the embedded default (no config)", () => {
  it("creates the account store on its first run and names the CLI beside it that issues a first key", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "first-run-"));
    const proxy = spawn(process.execPath, [join(OUT, "gateway.js")], {
      cwd,
      env: { ...process.env, GATEWAY_CONFIG: "", GATEWAY_PORT: "0", GATEWAY_OPERATOR_PORT: "0" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    proxy.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    try {
      await listeningPort(proxy, "gateway listening");
      const created = err.split("\n").find((line) => line.includes("account store created"));
      expect(JSON.parse(created ?? "{}")).toMatchObject({
        database: join(cwd, ".data/gateway.sqlite"),
        firstKey: `node ${join(OUT, "admin.js")} accounts create --email you@example.com; node ${join(OUT, "admin.js")} keys issue --account 1`,
      });
    } finally {
      await killChild(proxy);
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
