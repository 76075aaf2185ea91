import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { bundleOf } from "../support/bundles.js";
import { killChild, listeningPort } from "../support/child-process.js";
import { eventually } from "../support/eventually.js";

// A SIGHUP ends a process by default. Proxies reload on it, and an operator who signals every process of
// a deployment (kill -HUP -<group>, pkill -HUP) must not stop the control plane with them.

const dir = mkdtempSync(join(tmpdir(), "control-hangup-"));
const config = join(dir, "deployment.yaml");
writeFileSync(
  config,
  [
    "domain: gw.test",
    "listen: { host: 127.0.0.1, port: 0 }",
    "operator: null",
    "log: { level: info, access: false }",
    "accounts:",
    `  database: ${join(dir, "store.sqlite")}`,
    "  listen: { host: 127.0.0.1, port: 0 }",
    `  mail: { from: gw@example.com, outbox: ${join(dir, "outbox")} }`,
  ].join("\n"),
);

describe("the control plane and SIGHUP", () => {
  let child: ChildProcess | undefined;
  afterAll(async () => {
    await killChild(child);
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps serving, says it took no note, and still stops on SIGTERM with 0", async () => {
    child = spawn(process.execPath, [await bundleOf("src/control/main.ts")], {
      cwd: ROOT,
      env: { ...process.env, GATEWAY_CONFIG: config },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let logs = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      logs += chunk.toString();
    });
    const port = await listeningPort(child, "control plane listening");
    child.kill("SIGHUP");
    await eventually(() => logs.includes("SIGHUP ignored"), 5_000, "the SIGHUP's line");
    expect((await fetch(`http://127.0.0.1:${port}/v1/networks`)).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => child?.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});
