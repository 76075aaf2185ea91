import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// docs/accounts.md: a key whose successor was revoked (leaked as it was sent) is rotated again, and a
// rotation issues "a new active key with the same scopes" (an expiry among them: a free test's end, or none).
// But the key rotated again is in its grace period, its expiry the grace period's end, and the new key took
// that: a shared key's replacement stopped working a day later (rotationGraceSeconds), with the old one,
// leaving its owner with no key of that line at all.
const GRACE_SECONDS = 3600;

describe("a key rotated again after its successor was revoked", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let node: LoopbackNode;
  let gw: RunningGateway;
  let session = "";
  const email = "rotate-again@example.com";

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({ rotationGraceSeconds: GRACE_SECONDS }, smtp.port);
    node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
    gw = await startGateway({ upstreams: { eth: [node.url] }, keyStore: fx.accounts.keys });
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

  /** Issues through `path` and returns the new key's view and the key its e-mail holds. */
  const issued = async (path: string, body?: unknown) => {
    const delivery = smtp.next(email);
    const answer = await fx.api("POST", path, body, session);
    expect(answer.status).toBe(201);
    return { view: answer.json.key, key: keyIn(await delivery) };
  };
  /** Rotates `id`, revokes its successor, and rotates `id` again: the key its owner is left with. */
  const rotatedAgain = async (id: number) => {
    const leaked = await issued(`/v1/keys/${id}/rotate`);
    expect((await fx.api("POST", `/v1/keys/${leaked.view.id}/revoke`, undefined, session)).status).toBe(200);
    return issued(`/v1/keys/${id}/rotate`);
  };

  it("keeps a shared key's lack of expiry, and works after the old key's grace period", async () => {
    const first = await issued("/v1/orders", { network: "eth" });
    const again = await rotatedAgain(first.view.id);
    expect(again.view.expiresAt).toBeUndefined();
    await fx.accounts.keys.refresh();
    fx.advance((GRACE_SECONDS + 60) * 1000);
    const answer = await gw.call("eth", `/${again.key}`, { body: rpcBody("eth_blockNumber") });
    expect(answer.status).toBe(200);
    expect((await gw.call("eth", `/${first.key}`, { body: rpcBody("eth_blockNumber") })).status).toBe(401);
  });

  it("keeps a free test's end date", async () => {
    const test = await issued("/v1/free-tests", { network: "eth" });
    const again = await rotatedAgain(test.view.id);
    expect(again.view.expiresAt).toBe(test.view.expiresAt);
  });
});
