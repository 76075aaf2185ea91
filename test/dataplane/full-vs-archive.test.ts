import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";

// Full and archive endpoints with two real nodes: a pruned anvil behind `eth` (a full node) and a plain one behind
// `eth-archive`.
describe("full and archive endpoints", () => {
  let full: Anvil;
  let archive: Anvil;
  let gw: RunningGateway;
  const account = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

  beforeAll(async () => {
    [full, archive] = await Promise.all([startAnvil({ pruned: true }), startAnvil()]);
    await Promise.all([full.rpc("anvil_mine", ["0x100"]), archive.rpc("anvil_mine", ["0x100"])]);
    gw = await startGateway({ upstreams: { eth: [full.url], "eth-archive": [archive.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([full?.stop(), archive?.stop()]);
  });

  it("a historical eth_getBalance through eth, which the full node refuses, is answered by eth-archive for an archive key", async () => {
    const r = await gw.call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_getBalance", [account, "0x1"], 7) });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x21e19e0c9bab2400000" });
    expect(r.headers["x-upstream-tier"]).toBe("archive");
  });

  it("and gets ARCHIVE_REQUIRED, never the full node's own error, for a key without archive access", async () => {
    const r = await gw.call("eth", `/${KEYS.noArchive}/`, {
      body: rpcBody("eth_getBalance", [account, "0x1"], 7),
    });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ id: 7, error: { code: -32045, data: { archiveLabel: "eth-archive" } } });
    expect(r.text).not.toContain("BlockOutOfRangeError");
  });

  it("the same call through eth-archive returns the balance", async () => {
    const r = await gw.call("eth-archive", `/${KEYS.all}/`, {
      body: rpcBody("eth_getBalance", [account, "0x1"], 7),
    });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x21e19e0c9bab2400000" });
  });

  it("an archive label needs a key with archive access", async () => {
    const r = await gw.call("eth-archive", `/${KEYS.noArchive}/`, { body: rpcBody("eth_blockNumber") });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error: { code: -32041, data: { code: "NETWORK_FORBIDDEN" } } });
  });
});
