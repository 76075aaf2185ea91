import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { bundleOf } from "../support/bundles.js";

// The defaults 8080 to 8082 are often taken on an operator's machine. Each entry point whose listener cannot
// bind exits 1 with one line that names the listener, the address, why, and the setting and the variable
// that move it.

const dir = mkdtempSync(join(tmpdir(), "taken-ports-"));
const proxyLines = [
  "domain: gw.test",
  "listen: { host: 127.0.0.1, port: 0 }",
  "operator: { listen: { host: 127.0.0.1, port: 0 } }",
  "health: { probeIntervalMs: 0 }",
  "log: { level: warn, access: false }",
];
/** The proxy's deployment: every port free but the one a test takes. */
const proxyConfig = join(dir, "proxy.yaml");
writeFileSync(proxyConfig, proxyLines.join("\n"));
/** A deployment with an account store at `database`, written to `name`. */
function withAccountStore(name: string, database: string): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      ...proxyLines,
      "accounts:",
      `  database: ${join(dir, database)}`,
      "  listen: { host: 127.0.0.1, port: 0 }",
      `  mail: { from: gw@example.com, outbox: ${join(dir, "outbox")} }`,
    ].join("\n"),
  );
  return path;
}
/** The control plane's and the demo's: the same, with an account store. */
const accountsConfig = withAccountStore("accounts.yaml", "store.sqlite");

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

/** Runs an entry point's bundle with `env` over its deployment above; its exit code and stderr. */
async function run(entry: string, env: NodeJS.ProcessEnv): Promise<{ code: number; err: string }> {
  const config = entry === "src/proxy/main.ts" ? proxyConfig : accountsConfig;
  const bundle = await bundleOf(entry);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bundle],
      { cwd: ROOT, env: { ...process.env, GATEWAY_CONFIG: config, ...env }, timeout: 20_000 },
      (error, _out, err) => resolve({ code: error ? Number(error.code ?? 1) : 0, err }),
    );
  });
}

/** The line an entry point exits with when a listener cannot bind. */
const failure = (err: string) => err.split("\n").find((line) => line.startsWith("failed to start: "));

describe("a listener whose port is taken", () => {
  it("the proxy's public listener names listen.port and GATEWAY_PORT", async () => {
    const { code, err } = await run("src/proxy/main.ts", { GATEWAY_PORT: String(port) });
    expect(code).toBe(1);
    expect(failure(err)).toBe(
      `failed to start: the gateway cannot listen on 127.0.0.1:${port} (listen): the port is taken (EADDRINUSE); move it with listen.port in the deployment config or GATEWAY_PORT (0 takes any free port)`,
    );
  });

  it("the proxy's operator listener names operator.listen.port and GATEWAY_OPERATOR_PORT", async () => {
    const { code, err } = await run("src/proxy/main.ts", { GATEWAY_OPERATOR_PORT: String(port) });
    expect(code).toBe(1);
    expect(failure(err)).toBe(
      `failed to start: the operator API cannot listen on 127.0.0.1:${port} (operator.listen): the port is taken (EADDRINUSE); move it with operator.listen.port in the deployment config or GATEWAY_OPERATOR_PORT (0 takes any free port)`,
    );
  });

  it("the control plane's self-service listener names accounts.listen.port and GATEWAY_ACCOUNTS_PORT", async () => {
    const { code, err } = await run("src/control/main.ts", { GATEWAY_ACCOUNTS_PORT: String(port) });
    expect(code).toBe(1);
    expect(failure(err)).toBe(
      `failed to start: the self-service API cannot listen on 127.0.0.1:${port} (accounts.listen): the port is taken (EADDRINUSE); move it with accounts.listen.port in the deployment config or GATEWAY_ACCOUNTS_PORT (0 takes any free port)`,
    );
  });

  it("the demo (npm start) says the same for each of its listeners", async () => {
    for (const [variable, message] of [
      ["GATEWAY_PORT", "the gateway cannot listen"],
      ["GATEWAY_OPERATOR_PORT", "the operator API cannot listen"],
      ["GATEWAY_ACCOUNTS_PORT", "the self-service API cannot listen"],
    ] as const) {
      const { code, err } = await run("src/dev/main.ts", { [variable]: String(port) });
      expect(code).toBe(1);
      expect(failure(err)).toContain(`${message} on 127.0.0.1:${port}`);
      expect(failure(err)).toContain(`or ${variable} (0 takes any free port)`);
    }
  });

  it("with workers, a cause every worker meets is said once, by the primary", async () => {
    // no account store at the configured path (the demo's test above made its own): each worker fails
    const noStore = withAccountStore("no-store.yaml", "none.sqlite");
    const { code, err } = await run("src/proxy/main.ts", { GATEWAY_CONFIG: noStore, GATEWAY_WORKERS: "2" });
    expect(code).toBe(1);
    const lines = err.split("\n").filter((line) => line.startsWith("failed to start: "));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^failed to start: the account store .*none\.sqlite cannot be read/);
  });

  it("a host that is not this machine's names the host setting instead", async () => {
    const { code, err } = await run("src/proxy/main.ts", { GATEWAY_HOST: "192.0.2.1" });
    expect(code).toBe(1);
    expect(failure(err)).toMatch(
      /^failed to start: the gateway cannot listen on 192\.0\.2\.1:0 \(listen\): the address is not one of this machine's \(EADDRNOTAVAIL\); move it with listen\.host in the deployment config or GATEWAY_HOST$/,
    );
  });
});
