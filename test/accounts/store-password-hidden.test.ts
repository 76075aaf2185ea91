import { describe, expect, it } from "vitest";
import { DEFAULT_ACCOUNTS, DEFAULT_CONFIG } from "../../src/config/defaults.js";
import { PostgresAccountStore } from "../../src/control/accounts/postgres-store.js";
import { failureOf } from "../../src/control/admin-failure.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { runProxy } from "../../src/proxy/run.js";
import { redacted } from "../../src/store/database-url.js";

// docs/accounts.md shows an unreachable store's address with its password written `***`. A PostgreSQL URL
// may carry its password as libpq's `?password=` (pg reads every query parameter into the connection's
// config), or with an unencoded `@` that WHATWG URL (and so pg) reads as part of it: neither is written out,
// whole or in part, by the control plane, the proxy or the admin CLI.
const PASSWORD = "Sup3rSecretDbPassw0rd";

async function openFailure(url: string): Promise<string> {
  return PostgresAccountStore.open(url).then(
    () => {
      throw new Error("the store opened");
    },
    (error: Error) => error.message,
  );
}

describe("an account store URL's password", () => {
  it("is masked in the URL's redacted form, the rest as written", () => {
    expect(redacted(`postgres://gateway:${PASSWORD}@db.internal/gateway`)).toBe(
      "postgres://gateway:***@db.internal/gateway",
    );
    expect(redacted(`postgres://gateway@db.internal/gateway?sslmode=require&password=${PASSWORD}`)).toBe(
      "postgres://gateway@db.internal/gateway?sslmode=require&password=***",
    );
    expect(redacted(`postgresql://gateway:Sup3r@${PASSWORD}@db.internal:5433/gateway`)).toBe(
      "postgresql://gateway:***@db.internal:5433/gateway",
    );
    expect(redacted(".data/gateway.sqlite")).toBe(".data/gateway.sqlite");
  });

  it.each([
    ["user:password@", `gateway:${PASSWORD}@`],
    ["?password=", `gateway@`, `?password=${PASSWORD}`],
    ["a password holding an @", `gateway:Sup3r@${PASSWORD}@`],
  ])(
    "written as %s: not in the control plane's message when the store cannot be opened",
    async (_, auth, query = "") => {
      const port = await freePort();
      const message = await openFailure(`postgres://${auth}127.0.0.1:${port}/gateway${query}`);
      expect(message).toContain("cannot be opened");
      expect(message).toContain("***");
      expect(message).not.toContain(PASSWORD);
    },
  );

  it("is not in the proxy's message when the store cannot be read", async () => {
    const port = await freePort();
    const failure = await runProxy(
      {
        ...DEFAULT_CONFIG,
        listen: { host: "127.0.0.1", port: 0 },
        operator: undefined,
        accounts: {
          ...DEFAULT_ACCOUNTS,
          database: `postgres://gw:Sup3r@${PASSWORD}@127.0.0.1:${port}/accounts?password=${PASSWORD}`,
        },
      },
      createLogger("silent"),
    ).then(
      () => "",
      (error: Error) => error.message,
    );
    expect(failure).toContain("cannot be read");
    expect(failure).not.toContain(PASSWORD);
  }, 20_000);

  it("is not in the admin CLI's error line, whatever message repeats the URL", () => {
    const url = `postgres://gateway:Sup3r@${PASSWORD}@db.internal/gateway?password=${PASSWORD}`;
    const { line } = failureOf(new Error(`could not reach ${url}`));
    expect(line).toBe(
      "error INTERNAL: could not reach postgres://gateway:***@db.internal/gateway?password=***",
    );
  });
});
