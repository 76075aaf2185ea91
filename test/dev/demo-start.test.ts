import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { bundleOf } from "../support/bundles.js";

// The demo's command line, as the other entries': --help prints its usage, an unknown flag is refused. And a
// start that fails on a taken port leaves no active demo key behind in the account store.

const dir = mkdtempSync(join(tmpdir(), "demo-start-"));
const database = join(dir, "store.sqlite");
const config = join(dir, "demo.yaml");
writeFileSync(
  config,
  [
    "domain: gw.test",
    "listen: { host: 127.0.0.1, port: 0 }",
    "operator: { listen: { host: 127.0.0.1, port: 0 } }",
    "health: { probeIntervalMs: 0 }",
    "log: { level: warn, access: false }",
    "demoKey: true",
    "accounts:",
    `  database: ${database}`,
    "  listen: { host: 127.0.0.1, port: 0 }",
    `  mail: { from: gw@example.com, outbox: ${join(dir, "outbox")} }`,
  ].join("\n"),
);

let taken: Server;
let port = 0;
beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  port = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => taken.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function demo(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; out: string; err: string }> {
  const bundle = await bundleOf("src/dev/main.ts");
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bundle, ...args],
      { cwd: ROOT, env: { ...process.env, GATEWAY_CONFIG: config, ...env }, timeout: 20_000 },
      (error, out, err) => resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}

describe("the demo's command line", () => {
  it("--help prints the usage and exits 0, starting nothing", async () => {
    const { code, out } = await demo(["--help"]);
    expect(code).toBe(0);
    expect(out).toMatch(/^usage: npm start/);
    expect(out).not.toContain("API key");
  });

  it("an unknown flag exits 2 with the usage", async () => {
    const { code, err } = await demo(["--hepl"]);
    expect(code).toBe(2);
    expect(err).toContain("--hepl");
    expect(err).toContain("usage: npm start");
  });
});

describe("a demo whose gateway port is taken", () => {
  it("leaves no active key in the account store", async () => {
    const { code, err } = await demo([], { GATEWAY_PORT: String(port) });
    expect(code).toBe(1);
    expect(err).toContain(`the gateway cannot listen on 127.0.0.1:${port}`);
    const store = new Database(database, { readonly: true });
    try {
      const keys = store.prepare("SELECT status FROM api_keys").all() as { status: string }[];
      // the key was issued (the proxy's workers read it at their start), then revoked
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.filter((key) => key.status === "active")).toEqual([]);
    } finally {
      store.close();
    }
  });
});
