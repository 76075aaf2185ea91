import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccountsFixture, STORES, startAccounts } from "../accounts/helpers.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { EMITTER, EMITTER_CODE } from "../support/emitter-chain.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { keyIn, type SmtpCapture, startSmtp, tokenIn } from "../support/smtp.js";

// docs/plans.md, "Key settings": a key's contracts list holds eth_getLogs and eth_newFilter to the contracts
// it names, and new settings apply "from the next call" (a WebSocket is closed so that it comes back under
// them). A log filter the key made before its owner set the list (eth_newFilter {}: every contract) was
// still polled afterwards: eth_getFilterChanges went on answering the logs of every contract, which is
// eth_getLogs over every contract, refused to the key. A filter made under other settings is now no filter of
// the key's (FILTER_NOT_FOUND, -32000 at 200, on which ethers and viem make the filter again, and the new one
// is checked against the list). Real anvil, the self-service API, SQLite and PostgreSQL stores.

const LISTED = "0x00000000000000000000000000000000000000aa";
/** anvil's first dev account, which it signs for. */
const DEV = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

interface RpcAnswer {
  result?: unknown;
  error?: { code: number; data?: Record<string, unknown> };
}

describe.each(STORES)("a log filter made before its key's contracts list (%s store)", (store) => {
  let smtp: SmtpCapture;
  let fx: AccountsFixture;
  let anvil: Anvil;
  let gw: RunningGateway;
  let session = "";
  let key = "";
  let keyId = 0;
  const email = "old-filter@example.com";
  const rpc = async (method: string, params: unknown[]): Promise<RpcAnswer> =>
    (
      await gw.call("eth", `/${key}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      })
    ).json as RpcAnswer;

  beforeAll(async () => {
    smtp = await startSmtp();
    fx = await startAccounts({}, smtp.port, store);
    anvil = await startAnvil({ chainId: 1 });
    await anvil.rpc("anvil_setCode", [EMITTER, EMITTER_CODE]);
    gw = await startGateway({ upstreams: { eth: [anvil.url] }, keyStore: fx.accounts.keys });
    const confirmation = smtp.next(email);
    await fx.api("POST", "/v1/signup", { email });
    session = (await fx.api("POST", "/v1/confirm", { token: tokenIn(await confirmation) })).json.session;
    const delivery = smtp.next(email);
    const ordered = await fx.api("POST", "/v1/orders", { network: "eth" }, session);
    expect(ordered.status).toBe(201);
    keyId = ordered.json.key.id;
    key = keyIn(await delivery);
  });
  afterAll(async () => {
    await gw?.close();
    await anvil?.stop();
    await fx?.close();
    await smtp?.close();
  });

  it("answers none of the logs of a contract the list leaves out: the old filter is no filter of the key's", async () => {
    const made = await rpc("eth_newFilter", [{}]);
    const filter = made.result as string;
    expect(filter).toMatch(/^0x/);
    expect((await rpc("eth_getFilterChanges", [filter])).result).toEqual([]);
    const set = await fx.api("PUT", `/v1/keys/${keyId}/settings`, { contracts: [LISTED] }, session);
    expect(set.status).toBe(200);
    // the proxy has the list once a log query over every contract is refused
    await eventually(
      async () => (await rpc("eth_getLogs", [{}])).error?.data?.setting === "contracts",
      5_000,
      "the contracts list applied",
    );
    // a contract the list leaves out logs an event
    await anvil.rpc("eth_sendTransaction", [{ from: DEV, to: EMITTER }]);
    // anvil mines it just after it answers the send
    await eventually(
      async () => (await anvil.rpc<unknown[]>("eth_getLogs", [{ address: EMITTER }])).length === 1,
      5_000,
      "the event mined",
    );
    const changes = await rpc("eth_getFilterChanges", [filter]);
    expect(changes.result).toBeUndefined();
    expect(changes.error).toMatchObject({ code: -32000, data: { code: "FILTER_NOT_FOUND" } });
    const logs = await rpc("eth_getFilterLogs", [filter]);
    expect(logs.result).toBeUndefined();
    expect(logs.error).toMatchObject({ code: -32000, data: { code: "FILTER_NOT_FOUND" } });
    // in a batch, that call alone
    const batch = await gw.call("eth", `/${key}`, {
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "eth_getFilterChanges", params: [filter] },
        { jsonrpc: "2.0", id: 2, method: "eth_blockNumber", params: [] },
      ]),
    });
    const answers = batch.json as (RpcAnswer & { id: number })[];
    expect(answers.find((a) => a.id === 1)?.error?.data).toMatchObject({ code: "FILTER_NOT_FOUND" });
    expect(answers.find((a) => a.id === 2)?.result).toMatch(/^0x/);
    // made again, as an SDK does on that answer: held to the list
    expect((await rpc("eth_newFilter", [{}])).error?.data?.setting).toBe("contracts");
    expect((await rpc("eth_newFilter", [{ address: EMITTER }])).error?.data?.setting).toBe("contracts");
    const listed = (await rpc("eth_newFilter", [{ address: LISTED }])).result as string;
    expect((await rpc("eth_getFilterChanges", [listed])).result).toEqual([]);
  });
});
