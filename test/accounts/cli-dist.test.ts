import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/dev/free-port.js";
import { builtBundles } from "../support/bundles.js";

// The operator CLI as a deployment of dist/ has it: dist/admin.js, run by node alone (no tsx). Every
// failure is one line, `error <CODE>: <message>`, with the exit status its --help documents.

/** The run's bundles (support/bundles.ts). */
let OUT = "";
const scratch = mkdtempSync(join(tmpdir(), "admin-dist-"));
const database = join(scratch, "gateway.sqlite");
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

beforeAll(async () => {
  OUT = (await builtBundles()).dir;
}, 60_000);

function admin(
  env: NodeJS.ProcessEnv,
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(OUT, "admin.js"), ...args],
      // from another folder than the source tree: nothing of it is needed but node_modules' SQLite addon
      { cwd: tmpdir(), env: { PATH: process.env.PATH, GATEWAY_ACCOUNTS_DB: database, ...env } },
      (error, out, err) => resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}

/** The one line a failure writes: stderr holds exactly one, stdout nothing. */
function oneLine(result: { out: string; err: string }): string {
  expect(result.out).toBe("");
  expect(result.err.endsWith("\n")).toBe(true);
  const lines = result.err.slice(0, -1).split("\n");
  expect(lines).toHaveLength(1);
  expect(result.err).not.toMatch(/^\s+at /m);
  return lines[0] as string;
}

describe("dist/admin.js, the operator CLI built into dist/", () => {
  it("creates an account and issues a key in the embedded SQLite store", async () => {
    const created = await admin({}, "accounts", "create", "--email", "ops@example.com");
    expect(created).toMatchObject({ code: 0, err: "" });
    expect(created.out).toMatch(/^account 1 {2}ops@example.com {2}active/);
    const issued = await admin({}, "keys", "issue", "--account", "1", "--network", "eth");
    expect(issued.code).toBe(0);
    expect(issued.out).toMatch(/\nFN[A-Za-z0-9]{32}\n/);
  });

  it("a PostgreSQL store that is down: one line with STORE_UNAVAILABLE, exit 1, no stack, no password", async () => {
    const closed = await freePort();
    const result = await admin(
      { GATEWAY_ACCOUNTS_DB: `postgres://gateway:hunter2@127.0.0.1:${closed}/gateway` },
      "keys",
      "list",
      "--account",
      "1",
    );
    expect(result.code).toBe(1);
    const line = oneLine(result);
    expect(line).toMatch(
      new RegExp(
        `^error STORE_UNAVAILABLE: The account store cannot be reached; try again shortly \\(reason: the account store postgres://gateway:\\*\\*\\*@127\\.0\\.0\\.1:${closed}/gateway cannot be opened: .*ECONNREFUSED`,
      ),
    );
    expect(line).not.toContain("hunter2");
  });

  it.each([
    ["a refusal of the store's", 1, ["keys", "revoke", "--key", "999"], /^error KEY_NOT_FOUND: No such key/],
    [
      "a refused value",
      1,
      ["keys", "issue", "--account", "1", "--rate", "fast"],
      /^error INVALID_FIELD: A field of the request is missing or invalid \(field: --rate; reason: /,
    ],
    [
      "an unknown command",
      2,
      ["keys", "frobnicate"],
      /^error USAGE: unknown command "keys frobnicate"; --help/,
    ],
    [
      "an unknown flag",
      2,
      ["accounts", "list", "--frobnicate"],
      /^error USAGE: unknown flag --frobnicate; --help lists the commands$/,
    ],
    [
      "a flag without its value",
      2,
      ["keys", "list", "--account"],
      /^error USAGE: Option '--account <value>'/,
    ],
    ["no command", 2, [], /^error USAGE: no command given; --help lists the commands$/],
    [
      "an unknown upstreams verb",
      2,
      ["upstreams"],
      /^error USAGE: "upstreams" needs list, cordon or uncordon/,
    ],
  ])("%s: one line, exit %i", async (_, code, args, message) => {
    const result = await admin({}, ...(args as string[]));
    expect(result.code).toBe(code);
    expect(oneLine(result)).toMatch(message);
  });

  it("an invalid config, from the file or a variable: INVALID_CONFIG on one line, exit 2", async () => {
    const result = await admin(
      { GATEWAY_LOG_LEVEL: "verbose", GATEWAY_UPSTREAM_ETH: "not-a-url" },
      "accounts",
      "list",
    );
    expect(result.code).toBe(2);
    const line = oneLine(result);
    expect(line).toMatch(/^error INVALID_CONFIG: invalid configuration: GATEWAY_UPSTREAM_ETH: /);
    expect(line).toContain("; GATEWAY_LOG_LEVEL: /log/level must be equal to one of the allowed values");
    const missing = await admin(
      { GATEWAY_CONFIG: join(tmpdir(), "no-such-deployment.yaml") },
      "accounts",
      "list",
    );
    expect(missing.code).toBe(2);
    expect(oneLine(missing)).toMatch(
      /^error INVALID_CONFIG: invalid configuration: .*no-such-deployment\.yaml: ENOENT/,
    );
  });

  it("--help lists the commands, the line a failure writes and the exit statuses", async () => {
    const { code, out } = await admin({}, "--help");
    expect(code).toBe(0);
    for (const words of [
      "node dist/admin.js <command>",
      "keys issue --account <id>",
      'A failure is one line on stderr, "error <CODE>: <message>"',
      "  0  done",
      "  1  the command failed: STORE_UNAVAILABLE",
      "  2  nothing was run: USAGE",
    ])
      expect(out).toContain(words);
  });
});
