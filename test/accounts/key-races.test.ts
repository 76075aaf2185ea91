import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PLANS } from "../../src/config/defaults.js";
import { type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, type ApiAnswer, STORES, startAccounts } from "./helpers.js";

/** How many answers had each status and error code: `{ "201": 9, "409 KEY_LIMIT": 3 }`. */
function tally(answers: readonly ApiAnswer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status, json } of answers) {
    const outcome = json?.error?.code === undefined ? String(status) : `${status} ${json.error.code}`;
    counts[outcome] = (counts[outcome] ?? 0) + 1;
  }
  return counts;
}

// Requests for one account that arrive together, through the API, each judged against what the others
// wrote: a plan's maxKeys, a key's one successor and a free test per network hold under a burst.
describe.each(STORES)("concurrent key requests of one account (%s store)", (store) => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;

  async function signIn(email: string): Promise<string> {
    const mail = smtp.next(email);
    expect((await fx.api("POST", "/v1/signup", { email })).status).toBe(202);
    return (await fx.api("POST", "/v1/confirm", { token: tokenIn(await mail) })).json.session as string;
  }

  const together = (count: number, call: () => Promise<ApiAnswer>) =>
    Promise.all(Array.from({ length: count }, call));

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, store);
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  it("orders: as many keys as the plan has room for, however many orders arrive at once", async () => {
    const session = await signIn(`orders-${store}@example.com`);
    const maxKeys = DEFAULT_PLANS.shared?.maxKeys as number;
    expect((await fx.api("POST", "/v1/orders", { network: "eth" }, session)).status).toBe(201);
    const answers = await together(maxKeys + 2, () =>
      fx.api("POST", "/v1/orders", { network: "eth", plan: "shared" }, session),
    );
    expect(tally(answers)).toEqual({ "201": maxKeys - 1, "409 KEY_LIMIT": 3 });
    const listed = await fx.api("GET", "/v1/keys", undefined, session);
    expect(listed.json.keys.filter((k: { status: string }) => k.status === "active")).toHaveLength(maxKeys);
  });

  it("rotations: one successor of a key, however many rotations arrive at once", async () => {
    const session = await signIn(`rotations-${store}@example.com`);
    const ordered = await fx.api("POST", "/v1/orders", { network: "eth" }, session);
    const answers = await together(5, () =>
      fx.api("POST", `/v1/keys/${ordered.json.key.id}/rotate`, undefined, session),
    );
    expect(tally(answers)).toEqual({ "201": 1, "409 KEY_ALREADY_ROTATED": 4 });
    const successor = answers.find((a) => a.status === 201)?.json.key.id;
    const listed = await fx.api("GET", "/v1/keys", undefined, session);
    // the old key in its grace period, linked to the one successor
    expect(
      listed.json.keys.map((k: { id: number; status: string; replacedBy?: number }) => [
        k.id,
        k.status,
        k.replacedBy,
      ]),
    ).toEqual([
      [ordered.json.key.id, "active", successor],
      [successor, "active", undefined],
    ]);
  });

  it("free tests: one per network, however many requests arrive at once, and counted once", async () => {
    const session = await signIn(`free-tests-${store}@example.com`);
    const answers = await together(8, () => fx.api("POST", "/v1/free-tests", { network: "eth" }, session));
    expect(tally(answers)).toEqual({ "201": 1, "409 FREE_TEST_LIMIT": 7 });
    // the refused requests spent none of the account's three
    for (const network of ["dot", "near"])
      expect((await fx.api("POST", "/v1/free-tests", { network }, session)).status).toBe(201);
    const listed = await fx.api("GET", "/v1/keys", undefined, session);
    expect(listed.json.keys.map((k: { networks: string[] }) => k.networks)).toEqual([
      ["eth"],
      ["dot"],
      ["near"],
    ]);
  });
});
