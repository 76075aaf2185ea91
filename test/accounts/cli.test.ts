import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type AdminRun, adminHere as adminWith } from "../support/admin-here.js";

// The operator CLI's commands, run in this process (support/admin-here.ts).

const scratch = mkdtempSync(join(tmpdir(), "admin-cli-"));
const database = join(scratch, "gateway.sqlite");
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function admin(...args: string[]): Promise<AdminRun> {
  return adminWith({ GATEWAY_CONFIG: "", GATEWAY_ACCOUNTS_DB: database }, ...args);
}

describe("the operator CLI", () => {
  it("creates and lists accounts, issues, lists, rotates and revokes keys, suspends", async () => {
    expect((await admin("accounts", "create", "--email", "ops@example.com")).out).toMatch(
      /^account 1 {2}ops@example.com {2}active/,
    );

    const issued = await admin(
      "keys",
      "issue",
      "--account",
      "1",
      "--network",
      "eth",
      "--network",
      "dot",
      "--network",
      "eth",
      "--plan",
      "dedicated",
      "--rate",
      "25/40",
    );
    const key = /\n(FN[A-Za-z0-9]{32})\n/.exec(issued.out)?.[1] ?? "";
    expect(key).not.toBe("");
    expect(issued.out).toContain("This is the only time the key is shown.");

    const listed = await admin("keys", "list", "--account", "1");
    expect(listed.out).toContain(
      `key 1  ${key.slice(0, 10)}…  dedicated  eth,dot  archive:true  active  rate 25/s burst 40`,
    );
    expect(listed.out).not.toContain(key);
    // a free test has no archive unless the operator says so, as the free-test API gives it
    const free = await admin("keys", "issue", "--account", "1", "--network", "eth", "--plan", "free-test");
    expect(free.code, free.err).toBe(0);
    expect((await admin("keys", "list", "--account", "1")).out).toMatch(
      /key 2 .* free-test {2}eth {2}archive:false/,
    );

    const rotated = await admin("keys", "rotate", "--key", "1");
    const next = /\n(FN[A-Za-z0-9]{32})\n/.exec(rotated.out)?.[1] ?? "";
    expect(next).not.toBe(key);
    expect((await admin("keys", "list", "--account", "1")).out).toMatch(/key 1 .* active {2}expires /);

    // a key that would be issued expired is refused, as any bad number is
    const expired = await admin("keys", "issue", "--account", "1", "--network", "eth", "--days", "0");
    expect(expired.code).not.toBe(0);
    expect(expired.err).toContain("--days");
    expect((await admin("keys", "revoke", "--key", "3")).out).toMatch(/key 3 .* revoked/);
    expect((await admin("accounts", "suspend", "--account", "1")).out).toMatch(/suspended/);
    // no key for a suspended account: it would be shown as issued and answer UNAUTHORIZED
    const refused = await admin("keys", "issue", "--account", "1", "--network", "eth");
    expect(refused.code).toBe(1);
    expect(refused.err).toContain("ACCOUNT_NOT_ACTIVE");
    expect((await admin("accounts", "list")).out).toMatch(/account 1 {2}ops@example.com {2}suspended/);
  });

  it("issues a key of a plan the deployment config adds, and names the plans it has for one it does not", async () => {
    const config = join(scratch, "plans.yaml");
    writeFileSync(
      config,
      [
        "accounts:",
        `  database: ${database}`,
        "  listen: { host: 127.0.0.1, port: 0 }",
        `  mail: { from: ops@example.com, outbox: ${join(scratch, "outbox")} }`,
        "plans:",
        "  growth: { computeUnitRate: { perSecond: 5000, burst: 10000 }, orderable: false }",
        "",
      ].join("\n"),
    );
    const withConfig = (...args: string[]) =>
      adminWith({ GATEWAY_CONFIG: config, GATEWAY_ACCOUNTS_DB: database }, ...args);
    expect((await withConfig("accounts", "create", "--email", "growth@example.com")).code).toBe(0);
    const account = /account (\d+) {2}growth@example.com/.exec(
      (await withConfig("accounts", "list")).out,
    )?.[1] as string;
    const issued = await withConfig("keys", "issue", "--account", account, "--plan", "growth");
    expect(issued.code, issued.err).toBe(0);
    expect(issued.out).toMatch(/ {2}growth {2}/);
    const refused = await withConfig("keys", "issue", "--account", account, "--plan", "nope");
    expect(refused.code).toBe(1);
    expect(refused.err).toContain("INVALID_FIELD");
    expect(refused.err).toContain("growth");
  });

  it("refuses bad input with a clear message and a non-zero exit", async () => {
    const bad = await admin("accounts", "create", "--email", "nope");
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("INVALID_EMAIL");
    const unknown = await admin("keys", "revoke", "--key", "999");
    // no account was named: the line does not speak of one
    expect(unknown.err.trim()).toBe("error KEY_NOT_FOUND: No such key");
    const nobody = await admin("keys", "issue", "--account", "99999", "--network", "eth");
    expect(nobody.code).toBe(1);
    expect(nobody.err).toContain("(field: account; reason: no account has this id)");
    expect((await admin("frobnicate")).code).toBe(2);
    const rate = await admin("keys", "issue", "--account", "1", "--rate", "fast");
    expect(rate.err).toContain("INVALID_FIELD");
  });
});
