import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { bundleOf } from "../support/bundles.js";
import { eventually } from "../support/eventually.js";

// The demo's failure on a taken port says "0 takes any free port" (README, docs/configuration.md:
// GATEWAY_PORT, GATEWAY_ACCOUNTS_PORT). A newcomer who follows it gets a demo on ports it chose: the
// dashboard's endpoints and the e-mails' links must name those ports, not 0 (a newcomer audit).

const dir = mkdtempSync(join(tmpdir(), "demo-any-port-"));
const outbox = join(dir, "outbox");
const config = join(dir, "demo.yaml");
writeFileSync(
  config,
  [
    "domain: localhost",
    "listen: { host: 127.0.0.1, port: 0 }",
    "operator: { listen: { host: 127.0.0.1, port: 0 } }",
    "health: { probeIntervalMs: 0 }",
    "log: { level: info, access: false }",
    "accounts:",
    `  database: ${join(dir, "store.sqlite")}`,
    "  listen: { host: 127.0.0.1, port: 0 }",
    `  mail: { from: gw@example.com, outbox: ${outbox} }`,
  ].join("\n"),
);

let child: ChildProcess;
const logs: string[] = [];
let gatewayPort = 0;
let accountsPort = 0;
const portOf = (msg: string): number =>
  (JSON.parse(logs.find((l) => l.includes(`"msg":"${msg}"`)) as string) as { port: number }).port;

beforeAll(async () => {
  child = spawn(process.execPath, [await bundleOf("src/dev/main.ts")], {
    cwd: ROOT,
    env: { ...process.env, GATEWAY_CONFIG: config },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let pending = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    logs.push(...lines);
  });
  await eventually(() => logs.some((l) => l.includes('"msg":"gateway listening"')), 30_000, "listening");
  gatewayPort = portOf("gateway listening");
  accountsPort = portOf("accounts api listening");
});
afterAll(async () => {
  if (child?.exitCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("a demo on ports 0", () => {
  it("listens on ports it chose", () => {
    expect(gatewayPort).toBeGreaterThan(0);
    expect(accountsPort).toBeGreaterThan(0);
  });

  it("the dashboard's endpoints name the gateway's port", async () => {
    const r = await request(`http://127.0.0.1:${accountsPort}/v1/networks`);
    const catalog = (await r.body.json()) as {
      networks: { code: string; curl: string; endpoints: { label: string; http: string }[] }[];
    };
    const eth = catalog.networks.find((n) => n.code === "eth");
    expect(eth?.endpoints.find((e) => e.label === "eth")?.http).toBe(
      `http://eth.localhost:${gatewayPort}/YOUR_API_KEY/`,
    );
    expect(eth?.curl).toContain(`http://eth.localhost:${gatewayPort}/YOUR_API_KEY/`);
  });

  it("a sign-up e-mail links the dashboard at its port", async () => {
    const r = await request(`http://127.0.0.1:${accountsPort}/v1/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "newcomer@example.com" }),
    });
    await r.body.text();
    expect(r.statusCode).toBe(202);
    // quoted-printable: soft line breaks undone
    const mailText = () => {
      try {
        return readdirSync(outbox)
          .map((name) => readFileSync(join(outbox, name), "utf8"))
          .join("\n")
          .replace(/=\r?\n/g, "");
      } catch {
        return "";
      }
    };
    // written whole: its link and the token after it
    await eventually(() => /#confirm=\S+/.test(mailText()), 10_000, "the e-mail");
    const mail = mailText();
    expect(mail).toContain(`http://127.0.0.1:${accountsPort}/#confirm=`);
    expect(mail).not.toContain("127.0.0.1:0/");
  });
});
