import { JsonRpcProvider, Network } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Anvil } from "../support/anvil.js";
import { startAnvilsBlockApart } from "../support/anvils-block-apart.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A block named by hash that one node has not seen yet (real anvil, one block behind the other): geth's
// and anvil's errors for it ("unknown block", "header for hash not found", -32001 "Resource not found":
// registry reads.unknownBlock) send the read to the other node, as a null answer does. eth_getLogs by
// `blockHash` and an EIP-1898 `{blockHash}` read got the lagging node's error every other time.

describe("reads of a block by hash only one of two anvils has, and filters made on one", () => {
  let a: Anvil;
  let b: Anvil;
  let gw: RunningGateway;
  let hash = "";

  let restoreHosts: () => void = () => {};

  beforeAll(async () => {
    restoreHosts = resolveTestHosts();
    ({ a, b, hash } = await startAnvilsBlockApart());
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      // every read reaches a node
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    restoreHosts();
  });

  it("eth_getLogs by blockHash and eth_getBalance at {blockHash} are answered, whichever node they land on", async () => {
    const rpc = async (method: string, params: unknown[]) =>
      (
        await gw.call("eth", `/${KEYS.all}`, {
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        })
      ).json as { result?: unknown; error?: unknown };
    for (let i = 0; i < 6; i++) {
      expect(await rpc("eth_getLogs", [{ blockHash: hash }])).toEqual({ jsonrpc: "2.0", id: 1, result: [] });
      const balance = await rpc("eth_getBalance", [`0x${"ab".repeat(20)}`, { blockHash: hash }]);
      expect(balance.error, JSON.stringify(balance.error)).toBeUndefined();
    }
  });

  // A filter lives on the node that made it: viem's watchEvent and ethers' JsonRpcProvider poll it with
  // eth_getFilterChanges, which another node answers "filter not found" (registry reads.handles).
  it("a filter is polled on the node that made it, every time", async () => {
    const rpc = async (method: string, params: unknown[]) =>
      (
        await gw.call("eth", `/${KEYS.all}`, {
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        })
      ).json as { result?: unknown; error?: unknown };
    for (const [make, params] of [
      ["eth_newBlockFilter", []],
      ["eth_newFilter", [{ fromBlock: "latest" }]],
    ] as const) {
      const made = await rpc(make, [...params]);
      expect(typeof made.result, JSON.stringify(made)).toBe("string");
      for (let i = 0; i < 6; i++) {
        const polled = await rpc("eth_getFilterChanges", [made.result]);
        expect(polled.error, `${make} poll ${i}: ${JSON.stringify(polled.error)}`).toBeUndefined();
      }
      expect((await rpc("eth_uninstallFilter", [made.result])).result).toBe(true);
    }
  });

  // beside a call any node may answer (a read at the head would go to the node ahead alone)
  it("so is one made, or polled, in a batch (ethers' JsonRpcProvider batches what it sends in one tick)", async () => {
    const batch = async (calls: readonly [string, unknown[]][]) =>
      (
        await gw.call("eth", `/${KEYS.all}`, {
          body: JSON.stringify(calls.map(([method, params], id) => ({ jsonrpc: "2.0", id, method, params }))),
        })
      ).json as { id: number; result?: unknown; error?: unknown }[];
    const made = await batch([
      ["eth_chainId", []],
      ["eth_newFilter", [{ fromBlock: "latest" }]],
    ]);
    const filter = made.find((answer) => answer.id === 1)?.result;
    expect(typeof filter, JSON.stringify(made)).toBe("string");
    // and one made in a batch read whole, beside a call the gateway refuses (its answers merged in), by a
    // caller with no filter yet
    const partial = (
      await gw.call("eth", `/${KEYS.noArchive}`, {
        body: '[{"jsonrpc":"2.0","id":0,"method":"eth_newBlockFilter","params":[]},{"jsonrpc":"2.0","id":1,"method":"admin_peers","params":[]}]',
      })
    ).json as { id: number; result?: unknown }[];
    const other = partial.find((answer) => answer.id === 0)?.result;
    for (let i = 0; i < 6; i++) {
      const polled = await gw.call("eth", `/${KEYS.noArchive}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getFilterChanges", params: [other] }),
      });
      expect((polled.json as { error?: unknown }).error, `poll ${i}`).toBeUndefined();
    }
    for (let i = 0; i < 6; i++) {
      const polled = await batch([
        ["eth_getFilterChanges", [filter]],
        ["eth_chainId", []],
      ]);
      const changes = polled.find((answer) => answer.id === 0);
      expect(changes?.error, `poll ${i}: ${JSON.stringify(changes)}`).toBeUndefined();
    }
  });

  // A filter's logs are its maker's: a node hands a filter's changes to whoever names it, and Nethermind
  // numbers its filters in turn, so another key could read them by counting (or remove them).
  it("another key's filter is not polled, read or removed, in any spelling of its name", async () => {
    const rpc = async (key: string, method: string, params: unknown[]) => {
      const answer = await gw.call("eth", `/${key}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
      });
      return { status: answer.status, ...(answer.json as { result?: unknown; error?: { code: number } }) };
    };
    const made = await rpc(KEYS.all, "eth_newFilter", [{ fromBlock: "latest" }]);
    const name = made.result as string;
    expect(name).toMatch(/^0x[0-9a-f]+$/);
    const spellings = [name, name.toUpperCase().replace("0X", "0x"), `0x00${name.slice(2)}`];
    for (const method of ["eth_getFilterChanges", "eth_getFilterLogs", "eth_uninstallFilter"])
      for (const spelled of spellings) {
        const refused = await rpc(KEYS.noArchive, method, [spelled]);
        expect(refused, `${method} ${spelled}`).toMatchObject({
          status: 200,
          id: 7,
          error: { code: -32000, data: { code: "FILTER_NOT_FOUND" } },
        });
      }
    // at 200, as a node answers a filter it does not know, so that an SDK reads the node's -32000 (ethers
    // read an HTTP error status as the server's failure: "server response 404")
    const ethers = new JsonRpcProvider(`http://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`, Network.from(1), {
      staticNetwork: true,
    });
    const polled = await ethers
      .send("eth_getFilterChanges", [name])
      .catch((e: { code?: string; error?: unknown }) => e);
    expect(polled, String(polled)).toMatchObject({
      error: { code: -32000, data: { code: "FILTER_NOT_FOUND" } },
    });
    ethers.destroy();
    const batch = await gw.call("eth", `/${KEYS.noArchive}`, {
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
        { jsonrpc: "2.0", id: 2, method: "eth_getFilterChanges", params: [name] },
      ]),
    });
    // in a batch, that call alone is refused
    expect(batch.status).toBe(200);
    expect(batch.json).toMatchObject([
      { id: 1, result: "0x1" },
      { id: 2, error: { code: -32000, data: { code: "FILTER_NOT_FOUND" } } },
    ]);
    // and over a WebSocket, whose calls go to its node
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    try {
      for (const method of ["eth_getFilterChanges", "eth_uninstallFilter"])
        expect(await client.call(method, [name]), method).toMatchObject({
          error: { code: -32000, data: { code: "FILTER_NOT_FOUND" } },
        });
      expect((await client.call("eth_chainId")).result).toBe("0x1");
      // one made over a WebSocket is its maker's too, and polled over HTTP on its node
      const own = (await client.call("eth_newBlockFilter")).result as string;
      expect((await rpc(KEYS.all, "eth_getFilterChanges", [own])).error).toMatchObject({
        data: { code: "FILTER_NOT_FOUND" },
      });
      for (let i = 0; i < 4; i++)
        expect((await rpc(KEYS.noArchive, "eth_getFilterChanges", [own])).error, `poll ${i}`).toBeUndefined();
    } finally {
      client.close();
    }
    // its maker's polls still reach it, and it is still there to remove
    expect((await rpc(KEYS.all, "eth_getFilterChanges", [name])).error).toBeUndefined();
    expect((await rpc(KEYS.all, "eth_uninstallFilter", [name])).result).toBe(true);
  });
});
