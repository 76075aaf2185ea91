import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environmentSettings } from "../../src/config/environment.js";
import { dashboardUrl } from "../../src/control/endpoint-urls.js";
import { freePort } from "../../src/dev/free-port.js";
import { mailTo } from "../support/outbox.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// Without accounts.publicUrl the e-mails link the dashboard at its listener (docs/configuration.md). One on
// every IPv6 and IPv4 address (GATEWAY_ACCOUNTS_HOST=::) linked `http://:::18701/#confirm=…`, no URL a mail
// client opens (an IPv6 literal needs brackets), and one on 0.0.0.0 (deploy/scale-out.yaml's) the
// unspecified address, which no browser reaches.
describe("the e-mails' links without accounts.publicUrl", () => {
  it("name an IPv6 listener in brackets, and one on every interface as localhost", () => {
    const at = (host: string) => dashboardUrl({ listen: { host, port: 8081 } });
    expect(at("::1")).toBe("http://[::1]:8081");
    expect(at("::")).toBe("http://localhost:8081");
    expect(at("0.0.0.0")).toBe("http://localhost:8081");
    expect(at("10.0.0.7")).toBe("http://10.0.0.7:8081");
    expect(dashboardUrl({ listen: { host: "::", port: 8081 }, publicUrl: "https://dash.example.com" })).toBe(
      "https://dash.example.com",
    );
  });

  it("take GATEWAY_PUBLIC_URL as accounts.publicUrl", () => {
    const { settings, problems } = environmentSettings(
      { GATEWAY_PUBLIC_URL: "https://dash.example.com" },
      { accounts: { database: "x.sqlite" } },
    );
    expect(problems).toEqual([]);
    expect(settings).toContainEqual({
      variable: "GATEWAY_PUBLIC_URL",
      path: ["accounts", "publicUrl"],
      value: "https://dash.example.com",
    });
  });

  describe("from a control plane on ::", () => {
    let fx: AccountsFixture;
    beforeAll(async () => {
      fx = await startAccounts({ listen: { host: "::", port: await freePort() } });
    });
    afterAll(async () => {
      await fx?.close();
    });

    it("hold a link and an API address that parse as URLs", async () => {
      expect((await fx.api("POST", "/v1/signup", { email: "v6@example.com" })).status).toBe(202);
      const body = (await mailTo(join(fx.dir, "outbox"), "v6@example.com")).body;
      const link = /(http\S*#confirm=[A-Za-z0-9_-]+)/.exec(body)?.[1] ?? "";
      expect(new URL(link).hostname).toBe("localhost");
      const api = /POST (\S+)\/v1\/confirm/.exec(body)?.[1] ?? "";
      expect(() => new URL(`${api}/v1/confirm`), `API base in the e-mail: ${api}`).not.toThrow();
    });
  });
});
