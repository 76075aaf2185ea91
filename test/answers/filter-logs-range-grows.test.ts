import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A filter made by eth_newFilter {fromBlock: head - 300} (toBlock left out, as viem and ethers make it) was
// checked only when made, its part past the head counting as nothing. After 1,000 more blocks the same range
// as eth_getLogs (1,301 blocks) was refused BLOCK_RANGE_TOO_LARGE, yet eth_getFilterLogs(id) went to the
// node, which scanned it all (anvil, geth: fromBlock to min(toBlock, head)). The filter's range is kept with
// its handle, and eth_getFilterLogs is refused once it is wider than refuseAbove, without reaching the node.
// Real anvil.

describe("eth_getFilterLogs after the chain moved past refuseAbove (real anvil)", () => {
  let anvil: Anvil;
  let node: RecordingNode;
  let gw: RunningGateway;
  const rpc = (method: string, params: unknown[]) =>
    gw.call("eth", `/${KEYS.all}`, { body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }) });

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1 });
    await anvil.rpc("anvil_mine", ["0x12c"]); // 300
    node = await startRecordingNode(anvil.url);
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, name: "node-0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      blockRanges: {
        eth: { eth_getLogs: { splitAbove: 100, refuseAbove: 500 }, eth_newFilter: { refuseAbove: 500 } },
      },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await anvil?.stop();
  });

  const hex = (n: number) => `0x${n.toString(16)}`;
  const forms: [string, (head: number) => object][] = [
    ["{ fromBlock: head - 300 } (toBlock left out: latest)", (head) => ({ fromBlock: hex(head - 300) })],
    [
      "{ fromBlock: head - 300, toBlock: head + 10,000 }",
      (head) => ({ fromBlock: hex(head - 300), toBlock: hex(head + 10_000) }),
    ],
  ];
  for (const [name, form] of forms) {
    it(`a filter ${name} never has the node scan more than refuseAbove (500) blocks`, async () => {
      const start = Number(await anvil.rpc<string>("eth_blockNumber", []));
      const filter = form(start);
      const made = await rpc("eth_newFilter", [filter]);
      const id = (made.json as { result?: string }).result;
      if (id === undefined) {
        // refused when made: fine, as long as it is the range refusal
        expect(made.json).toMatchObject({ error: { data: { code: "BLOCK_RANGE_TOO_LARGE" } } });
        return;
      }
      // the chain moves on: 1,000 blocks
      await anvil.rpc("anvil_mine", ["0x3e8"]);
      const head = Number(await anvil.rpc<string>("eth_blockNumber", []));
      await eventually(
        () => (gw.gateway.upstreams.group("eth", "/")?.served.height ?? 0) >= head,
        4_000,
        "served the new head",
      );
      // what the node scans for it: fromBlock..head (1,301 blocks), as eth_getLogs would (refused by the gateway)
      const same = await rpc("eth_getLogs", [
        { fromBlock: (filter as { fromBlock: string }).fromBlock, toBlock: hex(head) },
      ]);
      expect(same.json).toMatchObject({ error: { data: { code: "BLOCK_RANGE_TOO_LARGE" } } });
      node.calls.length = 0;
      const logs = await rpc("eth_getFilterLogs", [id]);
      expect(logs.json).toMatchObject({ error: { data: { code: "BLOCK_RANGE_TOO_LARGE" } } });
      // in a batch, that call alone
      const batch = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_getFilterLogs", params: [id] },
          { jsonrpc: "2.0", id: 2, method: "eth_blockNumber", params: [] },
        ]),
      });
      const answers = batch.json as { id: number }[];
      expect(answers.find((one) => one.id === 1)).toMatchObject({
        error: { data: { code: "BLOCK_RANGE_TOO_LARGE" } },
      });
      expect(answers.find((one) => one.id === 2)).toMatchObject({ result: hex(head) });
      expect(node.calls.filter((c) => c.method === "eth_getFilterLogs")).toEqual([]);
    });
  }
});

describe("eth_getFilterLogs on a WebSocket after the chain moved past refuseAbove (real anvil)", () => {
  let anvil: Anvil;
  let gw: RunningGateway;
  let client: Client | undefined;
  let restore: (() => void) | undefined;

  beforeAll(async () => {
    restore = resolveTestHosts();
    anvil = await startAnvil({ chainId: 1 });
    await anvil.rpc("anvil_mine", ["0x12c"]); // 300
    gw = await startGateway({
      upstreams: { eth: [{ url: anvil.url, name: "node-0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      blockRanges: { eth: { eth_getLogs: { refuseAbove: 500 }, eth_newFilter: { refuseAbove: 500 } } },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    client?.close();
    await gw?.close();
    await anvil?.stop();
    restore?.();
  });

  it("refuses that call alone, as a range refusal, while the connection's others go on", async () => {
    client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const start = Number(await anvil.rpc<string>("eth_blockNumber", []));
    const made = await client.call("eth_newFilter", [{ fromBlock: `0x${(start - 300).toString(16)}` }]);
    const id = made.result as string;
    expect(typeof id).toBe("string");
    await anvil.rpc("anvil_mine", ["0x3e8"]);
    const head = Number(await anvil.rpc<string>("eth_blockNumber", []));
    await eventually(
      () => (gw.gateway.upstreams.group("eth", "/")?.served.height ?? 0) >= head,
      4_000,
      "served the new head",
    );
    const logs = await client.call("eth_getFilterLogs", [id]);
    expect(logs).toMatchObject({ error: { data: { code: "BLOCK_RANGE_TOO_LARGE" } } });
    expect(await client.call("eth_getFilterChanges", [id])).toMatchObject({ result: [] });
  });
});
