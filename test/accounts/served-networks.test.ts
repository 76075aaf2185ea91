import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../src/config/defaults.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// A deployment offers what it serves: a free test, an order or a key e-mail for a network none of whose
// labels has a node gave a key whose every call is 503 NO_UPSTREAM (and spent one of the account's free
// tests), and GET /v1/networks listed URLs that answer so. The control plane reads the proxies' config:
// the labels it gives upstreams are the ones offered. A config with none offers every label (a control
// plane run on its own config: served-endpoints.ts).
describe("a deployment whose config gives nodes to eth and eth-archive alone", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let session = "";

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, "sqlite", {
      domain: DEFAULT_CONFIG.domain,
      listen: DEFAULT_CONFIG.listen,
      support: DEFAULT_CONFIG.support,
      upstreams: { eth: ["http://127.0.0.1:8545"], "eth-archive": ["http://127.0.0.1:8546"], dot: [] },
    });
    const mail = smtp.next("carol@example.com");
    await fx.api("POST", "/v1/signup", { email: "carol@example.com" });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await mail) })).json.session as string;
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  it("lists eth's served labels alone", async () => {
    const networks = (await fx.api("GET", "/v1/networks")).json.networks as {
      code: string;
      endpoints: { label: string }[];
    }[];
    expect(networks.map((n) => n.code)).toEqual(["eth"]);
    expect(networks[0]?.endpoints.map((e) => e.label)).toEqual(["eth", "eth-archive"]);
  });

  it("refuses a free test or an order for a network without nodes, spending no free test", async () => {
    for (const [path, body] of [
      ["/v1/free-tests", { network: "dot" }],
      ["/v1/free-tests", { network: "xtz" }],
      ["/v1/orders", { network: "xtz", plan: "shared" }],
    ] as const) {
      const refused = await fx.api("POST", path, body, session);
      expect(refused, `${path} ${body.network}`).toMatchObject({
        status: 404,
        json: { error: { code: "NETWORK_NOT_FOUND" } },
      });
    }
    const mail = smtp.next("carol@example.com");
    const test = await fx.api("POST", "/v1/free-tests", { network: "eth" }, session);
    expect(test.status).toBe(201);
    const text = await mail;
    keyIn(text);
    // the e-mail names the served label's URL, none of eth's testnets, which have no node here
    expect(text).toMatch(/https?:\/\/eth\./);
    expect(text).not.toContain("eth-sepolia");
    expect(text).not.toContain("eth-holesky");
  });
});
