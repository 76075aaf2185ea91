import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_FIELDS } from "../../src/config/defaults.js";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";
import { type RunningGateway, rpcBody, startGateway, TEST_PLANS } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";

// A plan says whether it includes archive nodes (docs/plans.md). A key ordered on a plan without them got
// archive access all the same (every order was issued with it), so a business could not sell a plan
// without archive: the order form said "no archive" and the key reached eth-archive.
describe("archive nodes as the plan a key was ordered on includes them", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let gw: RunningGateway;
  let session = "";
  const email = "archive@example.com";
  const plans = {
    ...TEST_PLANS,
    // a plan sold without archive nodes says so
    lite: { ...PLAN_FIELDS, computeUnitRate: { perSecond: 1e9, burst: 1e9 }, archive: false as const },
  };

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, "sqlite", {
      domain: "localhost",
      listen: { host: "127.0.0.1", port: 0 },
      support: { email: "support@example.com", dedicatedNodeUrl: "https://example.com/dedicated" },
      plans,
    });
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
    gw = await startGateway({
      upstreams: { eth: [node.url], "eth-archive": [node.url] },
      keyStore: fx.accounts.keys,
      plans,
    });
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).json.session;
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await fx?.close();
    await smtp?.close();
  });

  const order = async (plan: string) => {
    const delivery = smtp.next(email);
    const ordered = await fx.api("POST", "/v1/orders", { network: "eth", plan }, session);
    expect(ordered.status).toBe(201);
    return { view: ordered.json.key as { archive: boolean }, key: keyIn(await delivery) };
  };
  const archiveCall = (key: string) =>
    gw.call("eth-archive", `/${key}`, { body: rpcBody("eth_blockNumber") });

  it("a plan without them: the key has none, and the archive label refuses it", async () => {
    const lite = await order("lite");
    expect(lite.view.archive).toBe(false);
    await fx.accounts.keys.refresh();
    expect((await gw.call("eth", `/${lite.key}`, { body: rpcBody("eth_blockNumber") })).status).toBe(200);
    const refused = await archiveCall(lite.key);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("the key has no archive access");
    // the order form says so
    const offered = (await fx.api("GET", "/v1/networks")).json.plans as { name: string; archive: boolean }[];
    expect(offered.find((p) => p.name === "lite")?.archive).toBe(false);
    expect(offered.find((p) => p.name === "shared")?.archive).toBe(true);
  });

  it("the shared plan includes them for the keys ordered on it", async () => {
    const shared = await order("shared");
    expect(shared.view.archive).toBe(true);
    await fx.accounts.keys.refresh();
    expect((await archiveCall(shared.key)).status).toBe(200);
  });
});
