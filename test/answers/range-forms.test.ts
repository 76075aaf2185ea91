import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// Ranges written in forms a node still reads as ranges (docs/upstreams.md, "Ranges"): a null block hash
// beside the bounds (anvil and geth read the range), a null paging member (no page asked), bounds as JSON
// numbers or decimal text (Erigon and Besu read them) are held to the limits as the hex form is; a bound
// no node reads alike (the text "null", which Erigon reads as the head) is refused before any node sees it.
// Real anvil with 2,000 blocks behind a recording node.

describe("range bounds in the forms a node reads (real anvil)", () => {
  let anvil: Anvil;
  let node: RecordingNode;
  let gw: RunningGateway;
  const rpc = (method: string, params: unknown[], key: string = KEYS.all) =>
    gw.call("eth", `/${key}`, { body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }) });
  const asked = (method: string) => node.calls.filter((c) => c.method === method);

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1 });
    await anvil.rpc("anvil_mine", ["0x7d0"]);
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

  const refusedUnsent = async (method: string, params: unknown[], code: string) => {
    node.calls.length = 0;
    const answer = await rpc(method, params);
    expect(answer.json, JSON.stringify(params)).toMatchObject({ error: { data: { code } } });
    expect(asked(method)).toEqual([]);
  };

  it("a null blockHash beside the bounds is no hash: the range is held to the limits", async () => {
    const filter = { fromBlock: "0x0", toBlock: "latest", blockHash: null };
    // the node reads it as the range 0..latest
    expect(Array.isArray(await anvil.rpc<unknown[]>("eth_getLogs", [filter]))).toBe(true);
    await refusedUnsent("eth_getLogs", [filter], "BLOCK_RANGE_TOO_LARGE");
    await refusedUnsent("eth_newFilter", [filter], "BLOCK_RANGE_TOO_LARGE");
  });

  it("a null paging member asks for no page: the range is split as without it", async () => {
    node.calls.length = 0;
    const answer = await rpc(
      "trace_filter",
      [{ fromBlock: "0x1", toBlock: "0x3e8", after: null }],
      KEYS.dedicated,
    );
    // anvil refuses a trace_filter wider than 300 blocks: every sub-range is within it
    expect(answer.json).toMatchObject({ id: 7, result: expect.any(Array) });
    const sent = asked("trace_filter").map((c) => (c.params as { fromBlock: string; toBlock: string }[])[0]);
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.every((r) => Number(r?.toBlock) - Number(r?.fromBlock) + 1 <= 100)).toBe(true);
  });

  it("bounds as JSON numbers or decimal text count as the heights they name", async () => {
    await refusedUnsent("eth_getLogs", [{ fromBlock: 0, toBlock: 2000 }], "BLOCK_RANGE_TOO_LARGE");
    await refusedUnsent("eth_getLogs", [{ fromBlock: "0", toBlock: "2000" }], "BLOCK_RANGE_TOO_LARGE");
    // a narrow one is the node's to read (anvil refuses decimal bounds itself)
    node.calls.length = 0;
    await rpc("eth_getLogs", [{ fromBlock: "10", toBlock: "20" }]);
    expect(asked("eth_getLogs")).toHaveLength(1);
  });

  it("a wide notification is not split: it wants no answer, and gets the one a narrow notification gets", async () => {
    const notify = (toBlock: string) =>
      gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify({
          jsonrpc: "2.0",
          method: "eth_getLogs",
          params: [{ fromBlock: "0x1", toBlock }],
        }),
      });
    const narrow = await notify("0x10");
    node.calls.length = 0;
    const wide = await notify("0x1f4");
    expect({ status: wide.status, text: wide.text }).toEqual({ status: narrow.status, text: narrow.text });
    expect(asked("eth_getLogs")).toHaveLength(1);
  });

  it("in a batch, such a bound refuses its own call only", async () => {
    const batch = [
      { jsonrpc: "2.0", id: 1, method: "eth_getLogs", params: [{ fromBlock: "0x0", toBlock: "null" }] },
      { jsonrpc: "2.0", id: 2, method: "eth_blockNumber", params: [] },
    ];
    const answer = await gw.call("eth", `/${KEYS.all}`, { body: JSON.stringify(batch) });
    const byId = new Map((answer.json as { id: number }[]).map((a) => [a.id, a]));
    expect(byId.get(1)).toMatchObject({ error: { data: { code: "INVALID_REQUEST" } } });
    expect(byId.get(2)).toMatchObject({ result: expect.stringMatching(/^0x/) });
  });

  it("a bound in no form a node reads alike is refused, naming it", async () => {
    await refusedUnsent("eth_getLogs", [{ fromBlock: "0x0", toBlock: "null" }], "INVALID_REQUEST");
    const answer = await rpc("eth_getLogs", [{ fromBlock: "soon", toBlock: "0x1" }]);
    expect(answer.status).toBe(400);
    expect(answer.json).toMatchObject({
      error: {
        data: { reason: '"fromBlock" of eth_getLogs is neither a block number nor a tag this network names' },
      },
    });
  });
});

describe("over a WebSocket (real anvil)", () => {
  let anvil: Anvil;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  beforeAll(async () => {
    restore = resolveTestHosts();
    anvil = await startAnvil({ chainId: 1 });
    gw = await startGateway({ upstreams: { eth: [anvil.url] } });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await anvil?.stop();
    restore();
  });

  it("a null blockHash beside a wide range is refused as the range without it is", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      for (const filter of [
        { fromBlock: "0x0", toBlock: "0x186a0" },
        { fromBlock: "0x0", toBlock: "0x186a0", blockHash: null },
      ]) {
        const answer = await client.call("eth_getLogs", [filter]);
        expect(answer.error, JSON.stringify(filter)).toMatchObject({
          data: { code: "BLOCK_RANGE_TOO_LARGE" },
        });
      }
    } finally {
      client.ws.close();
    }
  });
});
