import { describe, expect, it } from "vitest";
import { DEFAULT_ACCOUNTS, DEFAULT_CONFIG } from "../../src/config/defaults.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { runProxy } from "../../src/proxy/run.js";
import { needServices } from "../support/services.js";

// A proxy whose account store does not answer does not start, and its one line says what to look at: a
// server that is not running is not a store the control plane has yet to create.
describe("a proxy whose account store's server is down", () => {
  it("says to check the server, and names the store without its password", async () => {
    const port = await freePort();
    const started = runProxy(
      {
        ...DEFAULT_CONFIG,
        listen: { host: "127.0.0.1", port: 0 },
        operator: undefined,
        accounts: { ...DEFAULT_ACCOUNTS, database: `postgres://gw:secret@127.0.0.1:${port}/accounts` },
      },
      createLogger("silent"),
    );
    const failure = await started.then(
      () => "",
      (error: Error) => error.message,
    );
    expect(failure).toContain("cannot be read");
    expect(failure).toContain("is its server running, and at this address?");
    expect(failure).not.toContain("makes the tables");
    expect(failure).not.toContain("secret");
  }, 20_000);
});

const postgres = await needServices("postgres");

describe.skipIf(postgres.skip)("a proxy whose PostgreSQL database does not exist", () => {
  it("says to create it: the control plane makes the tables, not the database", async () => {
    const started = runProxy(
      {
        ...DEFAULT_CONFIG,
        listen: { host: "127.0.0.1", port: 0 },
        operator: undefined,
        accounts: {
          ...DEFAULT_ACCOUNTS,
          database: "postgres://postgres@127.0.0.1:5432/no_such_database_here",
        },
      },
      createLogger("silent"),
    );
    const failure = await started.then(
      () => "",
      (error: Error) => error.message,
    );
    expect(failure).toContain('database "no_such_database_here" does not exist');
    expect(failure).toContain("create the database (createdb)");
  }, 20_000);
});
