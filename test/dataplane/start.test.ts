import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/dev/free-port.js";
import { ROOT } from "../registry/helpers.js";
import { bundleOf } from "../support/bundles.js";
import { killChild } from "../support/child-process.js";
import { parseExposition } from "../support/prometheus-text.js";

// `npm start` on the embedded defaults: it must issue a key, start anvil behind eth and eth-archive, and
// print curl lines that work exactly as printed. Both from source and as the bundle `npm start` builds and
// runs: the bundle once failed on the account store's native addon while the source ran fine.
const data = mkdtempSync(join(tmpdir(), "gateway-start-"));
const ENTRIES: Record<"source" | "bundle", string[]> = {
  source: ["--import", "tsx", "src/dev/main.ts"],
  bundle: [],
};

describe("the embedded default deployment", () => {
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    // the bundle `npm start` builds, built once for the run (support/bundles.ts)
    ENTRIES.bundle = [await bundleOf("src/dev/main.ts")];
  }, 60_000);
  // each case's process, ended after its case whatever happened in it: one that failed before its own
  // shutdown was left running, with the local nodes it started, once the next case took its place here
  // (SIGTERM: the process ends its local nodes, which a SIGKILL would leave behind)
  afterEach(async () => {
    await killChild(child, "SIGTERM");
    child = undefined;
  });
  afterAll(() => rmSync(data, { recursive: true, force: true }));

  it.each([
    ["source", 1],
    ["source", 2],
    ["bundle", 2],
  ] as const)(
    "%s with %i worker process(es): prints a key and curl lines that work as printed, then shuts down cleanly",
    async (entry, workers) => {
      const operatorPort = await freePort();
      child = spawn(process.execPath, ENTRIES[entry], {
        cwd: ROOT,
        env: {
          ...process.env,
          GATEWAY_PORT: "0",
          GATEWAY_OPERATOR_PORT: String(operatorPort),
          GATEWAY_WORKERS: String(workers),
          GATEWAY_ACCOUNTS_PORT: "0",
          GATEWAY_ACCOUNTS_DB: join(data, `gateway-${entry}-${workers}.sqlite`),
          GATEWAY_OUTBOX: join(data, "outbox"),
          GATEWAY_LOG_LEVEL: "warn",
          GATEWAY_CONFIG: "",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
      });
      const deadline = Date.now() + 30_000;
      while (!/Labels without a local node/.test(out)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no banner: ${out}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(out).toMatch(/API key \(shown once\): FN[A-Za-z0-9]{32}\n/);
      // the dashboard's address, as printed, serves the page
      const dashboard = /Dashboard \(sign up, keys, usage\): (\S+)/.exec(out)?.[1] ?? "";
      const page = await fetch(dashboard);
      expect({ status: page.status, type: page.headers.get("content-type") }).toMatchObject({
        status: 200,
        type: expect.stringContaining("text/html"),
      });
      const curls = out.split("\n").filter((line) => line.trim().startsWith("curl "));
      expect(curls).toHaveLength(2);
      // each curl is a new connection, so with two workers both serve the key
      for (const line of [...curls, ...curls]) {
        const answer = await new Promise<string>((resolve, reject) =>
          execFile("sh", ["-c", line.trim()], (error, stdout) => (error ? reject(error) : resolve(stdout))),
        );
        expect(JSON.parse(answer)).toMatchObject({
          jsonrpc: "2.0",
          id: 1,
          result: expect.stringMatching(/^0x[0-9a-f]+$/),
        });
      }
      // The operator API answers once, for every worker: each probes and judges its upstreams itself.
      const { processes } = (await (await fetch(`http://127.0.0.1:${operatorPort}/upstreams`)).json()) as {
        processes: { pid: number; labels: { label: string; upstreams: { state: string }[] }[] }[];
      };
      expect(processes).toHaveLength(workers);
      expect(new Set(processes.map((p) => p.pid)).size).toBe(workers);
      for (const { labels } of processes) {
        expect(labels.map((l) => l.label).sort()).toEqual(["eth", "eth-archive"]);
        for (const { upstreams } of labels) expect(upstreams.map((u) => u.state)).toEqual(["healthy"]);
      }
      // Ready, and one scrape holds every worker's counts, summed by the primary: the four curls.
      const readyz = await fetch(`http://127.0.0.1:${operatorPort}/readyz`);
      expect({ status: readyz.status, body: await readyz.json() }).toEqual({
        status: 200,
        body: { ready: true, reasons: [] },
      });
      const metrics = parseExposition(await (await fetch(`http://127.0.0.1:${operatorPort}/metrics`)).text());
      const served = metrics.samples.filter(
        (s) => s.name === "gateway_requests_total" && s.labels.result === "ok",
      );
      expect(served.reduce((sum, s) => sum + s.value, 0)).toBe(4);
      const exited = new Promise<number | null>((resolve) => child?.once("exit", (code) => resolve(code)));
      // a terminal that closes sends SIGHUP: the demo stops as on SIGTERM, its nodes with it
      child.kill(workers === 1 ? "SIGTERM" : "SIGHUP");
      expect(await exited).toBe(0);
    },
    // a start from source compiles src/ through tsx in each of its processes; the banner's own deadline is 30 s
    60_000,
  );
});
