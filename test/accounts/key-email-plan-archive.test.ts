import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_PLANS } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type OutboxMail, outboxMails } from "../support/outbox.js";
import { keyIn, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// A key's e-mail lists "every label the key reaches" (endpoint-urls.ts: "the same two checks the proxy makes
// on every request ... so no URL is shown that the gateway would refuse"). The proxy reads archive access as
// the key's plan says (docs/plans.md `archive`: `true` for every key of the plan, `false` for none, whatever
// a key was granted), and so does the dashboard's keys page; the e-mail read the key's own grant alone. On a
// plan without archive nodes, a key the operator issued (granted them, as `keys issue` does by default) and
// rotated by its owner was mailed its eth-archive URL, which the gateway refuses (403 NETWORK_FORBIDDEN, "the
// key has no archive access"); on a plan with them, a key issued `--no-archive` was mailed none, though the
// gateway serves it there.

const DOMAIN = "gw.example";
const PLANS = {
  ...DEFAULT_PLANS,
  // a plan without archive nodes, and one whose every key has them
  basic: { ...(DEFAULT_PLANS.shared as NonNullable<(typeof DEFAULT_PLANS)["shared"]>), archive: false },
  dedicated: {
    ...(DEFAULT_PLANS.dedicated as NonNullable<(typeof DEFAULT_PLANS)["dedicated"]>),
    archive: true,
  },
};

describe("the archive URLs a key's e-mail lists follow its plan", () => {
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let gw: RunningGateway;
  let session = "";
  let accountId = 0;
  const email = "archive-mail@example.com";
  const mails = (): OutboxMail[] => outboxMails(join(fx.dir, "outbox"));

  beforeAll(async () => {
    fx = await startAccounts({}, undefined, "sqlite", {
      domain: DOMAIN,
      listen: { host: "127.0.0.1", port: 8080 },
      support: DEFAULT_CONFIG.support,
      plans: PLANS,
    });
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
    // the proxy the e-mail's URLs reach, on the same plans and keys
    gw = await startGateway({
      upstreams: { eth: [node.url], "eth-archive": [node.url] },
      keyStore: fx.accounts.keys,
      plans: PLANS,
    });
    await fx.api("POST", "/v1/signup", { email });
    await eventually(() => mails().some((m) => m.to === email), 5_000, "the confirmation e-mail");
    const confirmation = mails().find((m) => m.to === email) as OutboxMail;
    const confirmed = await fx.api("POST", "/v1/confirm", { token: tokenIn(confirmation.body) });
    session = confirmed.json.session;
    accountId = (await fx.api("GET", "/v1/account", undefined, session)).json.account.id;
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await fx?.close();
  });

  /** The rotation e-mail of a key the operator issued on `plan`, granted archive nodes or not. */
  async function rotationMail(plan: string, archive: boolean): Promise<{ body: string; archive: number }> {
    const { view } = await fx.accounts.service.keys.issue(accountId, { networks: ["eth"], plan, archive });
    const before = mails().length;
    const rotated = await fx.api("POST", `/v1/keys/${view.id}/rotate`, undefined, session);
    expect(rotated.status).toBe(201);
    await eventually(() => mails().length > before, 5_000, "the rotation e-mail");
    const body = (mails().at(-1) as OutboxMail).body;
    // what the gateway answers the new key on the archive label
    const answer = await gw.call("eth-archive", `/${keyIn(body)}`, { body: rpcBody("eth_blockNumber") });
    return { body, archive: answer.status };
  }

  it("a plan without archive nodes: no archive URL, though the key was granted them", async () => {
    const { body, archive } = await rotationMail("basic", true);
    expect(archive).toBe(403);
    expect(body).toContain(`eth.${DOMAIN}`);
    expect(body).not.toContain(`eth-archive.${DOMAIN}`);
  });

  it("a plan whose every key has archive nodes: the archive URL, though the key was issued without", async () => {
    const { body, archive } = await rotationMail("dedicated", false);
    expect(archive).toBe(200);
    expect(body).toContain(`eth-archive.${DOMAIN}`);
  });
});
