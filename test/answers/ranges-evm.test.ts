import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { EMITTER, EMITTER_CODE } from "../support/emitter-chain.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A log query wider than the label's split limit reaches the nodes as sub-ranges and comes back as one
// answer with every log once, in order (docs/upstreams.md, "Ranges"). One real anvil with 2,000 blocks, a
// log every 100; two recording nodes in front of it are the label's two nodes, so the test sees each
// upstream request.

const ETH_MAINNET = 1;
/** anvil's first dev account, unlocked: eth_sendTransaction needs no signature. */
const DEV = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

/** The eth_getLogs ranges a recording node was asked, as [from, to]. */
function ranges(node: RecordingNode): [number, number][] {
  return node.calls
    .filter((call) => call.method === "eth_getLogs")
    .map((call) => {
      const filter = (call.params as { fromBlock: string; toBlock: string }[])[0];
      return [Number(filter?.fromBlock), Number(filter?.toBlock)];
    });
}

describe("a wide eth_getLogs is split across the label's nodes and merged in order (real anvil)", () => {
  let anvil: Anvil;
  let nodes: RecordingNode[];
  let gw: RunningGateway;

  async function getLogs(filter: Record<string, unknown>) {
    return gw.call("eth", `/${KEYS.all}`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "eth_getLogs", params: [filter] }),
      headers: { "content-type": "application/json" },
    });
  }

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: ETH_MAINNET });
    await anvil.rpc("anvil_setCode", [EMITTER, EMITTER_CODE]);
    // blocks 1-99 empty, 100 with a log, and so on up to block 2000
    for (let i = 0; i < 20; i++) {
      await anvil.rpc("anvil_mine", ["0x63"]);
      const hash = await anvil.rpc("eth_sendTransaction", [{ from: DEV, to: EMITTER, gas: "0x186a0" }]);
      // anvil mines a sent transaction in a block of its own only after it answered: a mine that began
      // first would take it into its own first block, one lower (seen on a loaded machine)
      await eventually(
        async () => (await anvil.rpc("eth_getTransactionReceipt", [hash])) !== null,
        10_000,
        `the log of block ${100 * (i + 1)} mined`,
      );
    }
    nodes = await Promise.all([startRecordingNode(anvil.url), startRecordingNode(anvil.url)]);
    gw = await startGateway({
      upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `node-${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      // the tests count each node's requests: no hedge to the other node on a slow host's slow answer
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, hedgeMinMs: 5_000, hedgeMaxMs: 5_000 } },
      blockRanges: {
        eth: { eth_getLogs: { splitAbove: 500, refuseAbove: 5_000 }, eth_newFilter: { refuseAbove: 1_000 } },
      },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
    await anvil?.stop();
  });

  it("2,000 blocks with a limit of 500 reach the nodes as 4 ranges, and every log comes back once, in order", async () => {
    for (const node of nodes) node.calls.length = 0;
    const answer = await getLogs({ fromBlock: "0x1", toBlock: "0x7d0", address: EMITTER });
    expect(answer.status).toBe(200);
    const body = answer.json as { id: number; result: { blockNumber: string }[] };
    expect(body.id).toBe(7);
    expect(body.result.map((log) => Number(log.blockNumber))).toEqual(
      Array.from({ length: 20 }, (_, i) => 100 * (i + 1)),
    );
    const asked = nodes.flatMap(ranges).sort((a, b) => a[0] - b[0]);
    expect(asked).toEqual([
      [1, 500],
      [501, 1000],
      [1001, 1500],
      [1501, 2000],
    ]);
    // across the label's nodes, not all on one
    for (const node of nodes) expect(ranges(node).length).toBeGreaterThan(0);
  });

  it("a left-out toBlock is the label's head: the range is resolved before it is split", async () => {
    for (const node of nodes) node.calls.length = 0;
    const answer = await getLogs({ fromBlock: "0x1", address: EMITTER });
    expect((answer.json as { result: unknown[] }).result).toHaveLength(20);
    expect(nodes.flatMap(ranges)).toHaveLength(4);
  });

  it("a range past the refusal limit, or past the split limit in a batch (that call alone), is refused with the limits stated", async () => {
    for (const node of nodes) node.calls.length = 0;
    const wide = await getLogs({ fromBlock: "0x1", toBlock: "0x2710" });
    expect(wide.status).toBe(413);
    expect(wide.json).toMatchObject({
      id: 7,
      error: {
        code: -32005,
        data: { code: "BLOCK_RANGE_TOO_LARGE", blocks: 10_000, splitAbove: 500, refuseAbove: 5_000 },
      },
    });
    const batch = await gw.call("eth", `/${KEYS.all}`, {
      method: "POST",
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "eth_getLogs", params: [{ fromBlock: "0x1", toBlock: "0x3e8" }] },
        { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
      ]),
      headers: { "content-type": "application/json" },
    });
    // the wide call gets its own error, in its place, as any refused call of a batch does; the other goes
    // to a node
    expect(batch.status).toBe(200);
    expect(batch.json).toEqual([
      {
        jsonrpc: "2.0",
        id: 1,
        error: {
          code: -32005,
          message: expect.any(String),
          data: expect.objectContaining({
            code: "BLOCK_RANGE_TOO_LARGE",
            blocks: 1_000,
            splitAbove: 500,
            reason: expect.stringContaining("sent alone over HTTP"),
          }),
        },
      },
      { jsonrpc: "2.0", id: 2, result: "0x1" },
    ]);
    expect(nodes.flatMap(ranges)).toEqual([]);
    expect(await gw.metric("gateway_answer_rules_total", { label: "eth", rule: "range_refused" })).toBe(2);
    expect(await gw.metric("gateway_answer_rules_total", { label: "eth", rule: "range_split" })).toBe(2);
  });

  it("a filter scanning more than its limit is refused before a node makes it; one that watches blocks to come is made", async () => {
    for (const node of nodes) node.calls.length = 0;
    const filter = async (range: Record<string, string>) =>
      gw.call("eth", `/${KEYS.all}`, {
        method: "POST",
        body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "eth_newFilter", params: [range] }),
        headers: { "content-type": "application/json" },
      });
    // in capitals, as anvil reads it too
    const wide = await filter({ fromBlock: "0x1", toBlock: "LATEST" });
    expect(wide.status).toBe(413);
    expect(wide.json).toMatchObject({
      error: { data: { code: "BLOCK_RANGE_TOO_LARGE", refuseAbove: 1_000 } },
    });
    expect(nodes.flatMap((node) => node.calls.filter((c) => c.method === "eth_newFilter"))).toEqual([]);
    // from block 1,900 to far past the head: the node scans a hundred blocks (two logs) and watches the rest
    const watching = await filter({ fromBlock: "0x76c", toBlock: "0xffffff" });
    expect(watching.status).toBe(200);
    const id = (watching.json as { result: string }).result;
    const logs = await gw.call("eth", `/${KEYS.all}`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "eth_getFilterLogs", params: [id] }),
      headers: { "content-type": "application/json" },
    });
    expect(
      (logs.json as { result: { blockNumber: string }[] }).result.map((log) => Number(log.blockNumber)),
    ).toEqual([1_900, 2_000]);
  });

  it("a bound too large to read exactly (past 2^53) counts as wide as it is, not as a range the node clamps", async () => {
    for (const node of nodes) node.calls.length = 0;
    for (const toBlock of ["0x20000000000000", "0xffffffffffffffff"]) {
      const huge = await getLogs({ fromBlock: "0x0", toBlock });
      expect(huge.status, toBlock).toBe(413);
      expect(huge.json).toMatchObject({
        error: { data: { code: "BLOCK_RANGE_TOO_LARGE", refuseAbove: 5_000 } },
      });
    }
    expect(nodes.flatMap(ranges)).toEqual([]);
  });

  it("a range within the limit goes as sent, to one node", async () => {
    for (const node of nodes) node.calls.length = 0;
    const answer = await getLogs({ fromBlock: "0x64", toBlock: "0x12c", address: EMITTER });
    expect((answer.json as { result: unknown[] }).result).toHaveLength(3);
    expect(nodes.flatMap(ranges)).toEqual([[100, 300]]);
  });

  it("a numbered toBlock above the head is the node's to cap: split only up to the head, and never waited for", async () => {
    const head = Number(await anvil.rpc<string>("eth_blockNumber"));
    const hex = (n: number) => `0x${n.toString(16)}`;
    const waits = async () => gw.metric("gateway_answer_rules_total", { label: "eth", rule: "head_wait" });
    const waited = await waits();
    const own = async (filter: Record<string, unknown>) =>
      (await anvil.rpc<{ blockNumber: string }[]>("eth_getLogs", [filter])).map((log) =>
        Number(log.blockNumber),
      );
    const logs = (answer: { json: unknown }) =>
      ((answer.json as { result?: { blockNumber: string }[] }).result ?? []).map((log) =>
        Number(log.blockNumber),
      );

    // narrow, ending above the head: goes as sent, at once, to a node at the head
    for (const node of nodes) node.calls.length = 0;
    const narrow = { fromBlock: hex(head - 10), toBlock: hex(head + 10), address: EMITTER };
    const narrowAnswer = await getLogs(narrow);
    expect(narrowAnswer.json).toMatchObject({ id: 7, result: expect.any(Array) });
    expect(logs(narrowAnswer)).toEqual(await own(narrow));
    expect(nodes.flatMap(ranges)).toEqual([[head - 10, head + 10]]);
    expect(await waits()).toBe(waited);

    // wider than the split limit as written, within it up to the head: goes as sent, alone and in a batch
    for (const node of nodes) node.calls.length = 0;
    const within = { fromBlock: hex(head - 100), toBlock: hex(head + 1_000), address: EMITTER };
    const withinAnswer = await getLogs(within);
    expect(logs(withinAnswer)).toEqual(await own(within));
    expect(logs(withinAnswer)).toContain(head - (head % 100));
    const batch = await gw.call("eth", `/${KEYS.all}`, {
      method: "POST",
      body: JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "eth_getLogs", params: [within] }]),
      headers: { "content-type": "application/json" },
    });
    expect(batch.status).toBe(200);
    expect(logs({ json: (batch.json as unknown[])[0] })).toEqual(await own(within));
    expect(nodes.flatMap(ranges)).toEqual([
      [head - 100, head + 1_000],
      [head - 100, head + 1_000],
    ]);

    // wider than the split limit up to the head: numbered sub-ranges up to the head, and the last one from
    // the head to the end as written, which the node caps at its head
    for (const node of nodes) node.calls.length = 0;
    const wide = { fromBlock: "0x1", toBlock: hex(head + 500), address: EMITTER };
    const wideAnswer = await getLogs(wide);
    expect(wideAnswer.status).toBe(200);
    expect(logs(wideAnswer)).toEqual(await own(wide));
    expect(logs(wideAnswer)).toHaveLength(20);
    const asked = nodes.flatMap(ranges).sort((a, b) => a[0] - b[0]);
    expect(asked.at(-1)).toEqual([head, head + 500]);
    expect(asked.every(([, to]) => to < head || to === head + 500)).toBe(true);
    expect(asked).toHaveLength(Math.ceil((head - 1) / 500) + 1);

    // no call waited for a node to reach a block above the head
    expect(await waits()).toBe(waited);
  });

  it("a merged answer past the answer size cap is refused with the range's limits stated", async () => {
    // each 500-block sub-range (five logs) is within the cap; the twenty logs merged are not
    const capped = await startGateway({
      upstreams: { eth: nodes.map((node, i) => ({ url: node.url, name: `node-${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, maxResponseBytes: 5_000 } },
      blockRanges: { eth: { eth_getLogs: { splitAbove: 500, refuseAbove: 5_000 } } },
    });
    try {
      await everyNodeInRotation(capped);
      const answer = await capped.call("eth", `/${KEYS.all}`, {
        method: "POST",
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 7,
          method: "eth_getLogs",
          params: [{ fromBlock: "0x1", toBlock: "0x7d0", address: EMITTER }],
        }),
        headers: { "content-type": "application/json" },
      });
      expect(answer.status).toBe(413);
      expect(answer.json).toMatchObject({
        id: 7,
        error: {
          code: -32005,
          data: {
            code: "BLOCK_RANGE_TOO_LARGE",
            method: "eth_getLogs",
            from: 1,
            to: 2_000,
            blocks: 2_000,
            splitAbove: 500,
            refuseAbove: 5_000,
            maxResponseBytes: 5_000,
          },
        },
      });
    } finally {
      await capped.close();
    }
  });

  it("trace_filter is split the same way, unless it pages itself with after or count", async () => {
    for (const node of nodes) node.calls.length = 0;
    const traces = async (filter: Record<string, unknown>) =>
      (
        await gw.call("eth", `/${KEYS.dedicated}`, {
          method: "POST",
          body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "trace_filter", params: [filter] }),
          headers: { "content-type": "application/json" },
        })
      ).json as { result: { blockNumber: number }[] };
    const asked = () => nodes.flatMap((node) => node.calls.filter((c) => c.method === "trace_filter"));
    const split = await traces({ fromBlock: "0x1", toBlock: "0x3e8" });
    expect(split.result.map((t) => t.blockNumber)).toEqual(
      Array.from({ length: 10 }, (_, i) => 100 * (i + 1)),
    );
    // the registry's trace_filter limit, 100 blocks (anvil's own cap is 300)
    expect(asked()).toHaveLength(10);
    const paged = await traces({ fromBlock: "0x1", toBlock: "0x12c", count: 2 });
    expect(paged.result.map((t) => t.blockNumber)).toEqual([100, 200]);
    expect(asked()).toHaveLength(11);
  });

  it("a range up to safe or finalized ends where its tag does, not at the head: finalized the prober read, safe a last sub-range keeps", async () => {
    // anvil names finalized the block 64 below its head, safe 32 below: the log of block 2000 is above both
    const finalizedHeight = () => gw.gateway.upstreams.group("eth", "/")?.finalized ?? -1;
    await eventually(() => finalizedHeight() > 1_900, 5_000, "the prober read the finalized block");
    const finalized = finalizedHeight();
    for (const tag of ["finalized", "safe"]) {
      for (const node of nodes) node.calls.length = 0;
      const filter = { fromBlock: "0x1", toBlock: tag, address: EMITTER };
      const answer = await getLogs(filter);
      const own = await anvil.rpc<{ blockNumber: string }[]>("eth_getLogs", [filter]);
      const got = (answer.json as { result: { blockNumber: string }[] }).result;
      expect(got.map((log) => Number(log.blockNumber))).toEqual(own.map((log) => Number(log.blockNumber)));
      expect(got.map((log) => Number(log.blockNumber))).not.toContain(2_000);
      const asked = nodes
        .flatMap((node) => node.calls.filter((call) => call.method === "eth_getLogs"))
        .map((call) => (call.params as { fromBlock: string; toBlock: string }[])[0]);
      if (tag === "finalized") {
        // the finalized height the prober read: numbered sub-ranges up to it
        const last = asked.sort((a, b) => Number(a?.fromBlock) - Number(b?.fromBlock)).at(-1);
        expect(last?.toBlock).toBe(`0x${finalized.toString(16)}`);
        expect(asked.length).toBe(Math.ceil(finalized / 500));
      } else {
        // numbered sub-ranges up to the finalized height, then one from it to the tag, which the node reads
        expect(asked.filter((range) => range?.toBlock === tag)).toEqual([
          expect.objectContaining({ fromBlock: `0x${finalized.toString(16)}` }),
        ]);
        expect(asked.length).toBe(Math.ceil((finalized - 1) / 500) + 1);
      }
    }
  });
});
