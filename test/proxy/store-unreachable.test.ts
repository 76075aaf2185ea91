import { describe, expect, it } from "vitest";
import { DEFAULT_ACCOUNTS, DEFAULT_CONFIG } from "../../src/config/defaults.js";
import { freePort } from "../../src/dev/free-port.js";
import { createLogger } from "../../src/log.js";
import { runProxy } from "../../src/proxy/run.js";

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
    expect(failure).not.toContain("the control plane creates it");
    expect(failure).not.toContain("secret");
  }, 20_000);
});
