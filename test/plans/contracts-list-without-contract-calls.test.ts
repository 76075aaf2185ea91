import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccountsFixture, startAccounts } from "../accounts/helpers.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";

// A key's contracts list holds for the calls the registry says name a contract (docs/plans.md: EVM, TRON,
// Starknet, VeChain). A Tezos customer who locked its key to its own contract (a KT1… address, taken as a
// base58 address) was answered 200 and shown the list as saved, and the list restricted nothing: no call of
// Tezos is one the registry reads a contract from, so a key copied out of the customer's page reached every
// contract. Such a list is refused when saved, naming the field and why; a key of a network whose calls
// name contracts takes it as before.
describe("a contracts list on a key whose network's calls name no contract the gateway reads", () => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let session = "";
  const email = "contracts-nowhere@example.com";

  const order = async (network: string): Promise<number> => {
    const delivery = smtp.next(email);
    const ordered = await fx.api("POST", "/v1/orders", { network }, session);
    expect(ordered.status).toBe(201);
    keyIn(await delivery);
    return ordered.json.key.id;
  };

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port);
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).json.session;
  });
  afterAll(async () => {
    await fx?.close();
    await smtp?.close();
  });

  it("is refused, naming the list, and nothing is saved", async () => {
    const id = await order("xtz");
    const put = await fx.api(
      "PUT",
      `/v1/keys/${id}/settings`,
      { contracts: ["KT1PWx2mnDueood7fEmfbBDKx1D9BAnnXitn"] },
      session,
    );
    expect(put.status).toBe(400);
    expect(put.json.error).toMatchObject({ code: "INVALID_FIELD", field: "contracts" });
    expect(put.json.error.reason).toMatch(/restrict nothing/);
    const listed = await fx.api("GET", "/v1/keys", undefined, session);
    const key = listed.json.keys.find((k: { id: number }) => k.id === id);
    expect(key.settings?.contracts).toBeUndefined();
  });

  it("is taken on a key of a network whose calls name contracts", async () => {
    const id = await order("eth");
    const put = await fx.api(
      "PUT",
      `/v1/keys/${id}/settings`,
      { contracts: ["0xdAC17F958D2ee523a2206206994597C13D831ec7"] },
      session,
    );
    expect(put.status).toBe(200);
    expect(put.json.key.settings.contracts).toEqual(["0xdac17f958d2ee523a2206206994597c13d831ec7"]);
  });
});
