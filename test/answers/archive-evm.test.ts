import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH, DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { type ArchivePair, startArchivePair } from "../support/archive-pair.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import type { RecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// Archive reads on a full label (docs/upstreams.md, "Archive"): a full node started with --prune-history
// behind `eth`, and an archive node with the same 300 blocks behind `eth-archive`, both real anvils, each
// behind a recording node so that the test sees which node was asked.

const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
/** The dev account's balance at genesis, in every block here: nothing is ever sent. */
const BALANCE = "0x21e19e0c9bab2400000";

/** The archive pair behind a gateway whose one key `key` is on `plan`, the pair's head served. */
async function pairGateway(key: string, plan: Partial<PlanSpec>, cache = false) {
  const pair = await startArchivePair(300);
  const gw = await startGateway({
    upstreams: pair.upstreams,
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    cache: { ...DEFAULT_CACHE, enabled: cache },
    plans: {
      ...DEFAULT_PLANS,
      tested: {
        ...PLAN_FIELDS,
        computeUnitRate: { perSecond: 10_000, burst: 10_000 },
        archive: true,
        ...plan,
      },
    },
    keys: [{ key, networks: "*", plan: "tested", rate: { perSecond: 1000, burst: 1000 } }],
  });
  await servingAt300(gw);
  return { pair, gw };
}

/** Both nodes in rotation, and the label's served head the prober's reading of the full node. */
async function servingAt300(gw: RunningGateway): Promise<void> {
  await everyNodeInRotation(gw);
  await eventually(
    async () => (await gw.metric("gateway_upstream_head", { label: "eth" })) === 300,
    5000,
    "head",
  );
  // and its finality, anvil's 64 below: a read sent before the label knew it is final only if no head
  // epoch moves while it is answered (src/cache/kept-answer.ts)
  await eventually(() => (gw.gateway.upstreams.group("eth", "/")?.finalized ?? -1) >= 236, 5000, "finality");
}

describe("archive reads reach archive nodes, for keys with archive access only (real anvil)", () => {
  let fullNode: RecordingNode;
  let archiveNode: RecordingNode;
  let pair: ArchivePair;
  let gw: RunningGateway;

  const balanceCalls = (node: RecordingNode) =>
    node.calls.filter((c) => c.method === "eth_getBalance").length;
  const getBalance = (key: string, block: string) =>
    gw.call("eth", `/${key}`, { body: rpcBody("eth_getBalance", [ACCOUNT, block], 7) });

  beforeAll(async () => {
    pair = await startArchivePair(300);
    ({ fullNode, archiveNode } = pair);
    gw = await startGateway({
      upstreams: pair.upstreams,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await servingAt300(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await pair?.stop();
  });

  it("a block older than a full node keeps goes to the archive node at once, for an archive key", async () => {
    const [fullBefore, archiveBefore] = [balanceCalls(fullNode), balanceCalls(archiveNode)];
    const r = await getBalance(KEYS.all, "0x1");
    expect(r.json).toEqual({ jsonrpc: "2.0", id: 7, result: BALANCE });
    expect(r.headers["x-upstream-tier"]).toBe("archive");
    expect(balanceCalls(fullNode)).toBe(fullBefore);
    expect(balanceCalls(archiveNode)).toBe(archiveBefore + 1);
    // counted under the archive label
    await eventually(
      () =>
        gw.logs.some((line) => line.includes('"label":"eth-archive"') && line.includes('"tier":"archive"')),
      2000,
      "the access line under eth-archive",
    );
  });

  it("a read at earliest (block 0), bare or in an EIP-1898 object, goes to the archive node at once", async () => {
    for (const block of ["earliest", { blockNumber: "earliest" }]) {
      const [fullBefore, archiveBefore] = [balanceCalls(fullNode), balanceCalls(archiveNode)];
      const r = await gw.call("eth", `/${KEYS.all}`, {
        body: rpcBody("eth_getBalance", [ACCOUNT, block], 7),
      });
      expect(r.json).toEqual({ jsonrpc: "2.0", id: 7, result: BALANCE });
      expect(r.headers["x-upstream-tier"]).toBe("archive");
      expect(balanceCalls(fullNode)).toBe(fullBefore);
      expect(balanceCalls(archiveNode)).toBe(archiveBefore + 1);
    }
  });

  it("a recent block the full node refuses as missing is sent to the archive node once more", async () => {
    const [fullBefore, archiveBefore] = [balanceCalls(fullNode), balanceCalls(archiveNode)];
    const r = await getBalance(KEYS.all, "0x12b");
    expect(r.json).toEqual({ jsonrpc: "2.0", id: 7, result: BALANCE });
    expect(r.headers["x-upstream-tier"]).toBe("archive");
    expect(balanceCalls(fullNode)).toBe(fullBefore + 1);
    expect(balanceCalls(archiveNode)).toBe(archiveBefore + 1);
  });

  it("a key without archive access gets ARCHIVE_REQUIRED naming eth-archive: never the node's error, never archive data", async () => {
    const archiveBefore = balanceCalls(archiveNode);
    for (const block of ["0x1", "0x12b"]) {
      const r = await getBalance(KEYS.noArchive, block);
      expect(r.status).toBe(403);
      expect(r.json).toMatchObject({
        id: 7,
        error: { code: -32045, data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" } },
      });
      expect(r.text).not.toContain("BlockOutOfRangeError");
    }
    expect(balanceCalls(archiveNode)).toBe(archiveBefore);
  });

  it("in a batch, the calls the full node refuses as missing go to the archive node, the rest stay", async () => {
    const batch = (key: string) =>
      gw.call("eth", `/${key}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [ACCOUNT, "0x12b"] },
          { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
          { jsonrpc: "2.0", id: 3, method: "eth_getBalance", params: [ACCOUNT, "0x1"] },
        ]),
        headers: { "content-type": "application/json" },
      });
    const archiveBefore = balanceCalls(archiveNode);
    const units = () => gw.metric("gateway_compute_units_total", { label: "eth" });
    const unitsBefore = await units();
    const archived = await batch(KEYS.all);
    expect(archived.json).toEqual([
      { jsonrpc: "2.0", id: 1, result: BALANCE },
      { jsonrpc: "2.0", id: 2, result: "0x1" },
      { jsonrpc: "2.0", id: 3, result: BALANCE },
    ]);
    expect(archived.headers["x-upstream-tier"]).toBe("full+archive");
    expect(balanceCalls(archiveNode)).toBe(archiveBefore + 2);
    // the archive node's two answers at twice their 20 units; the full node's eth_chainId at its 5
    expect(await units()).toBe(unitsBefore + 2 * 2 * 20 + 5);

    const refused = await batch(KEYS.noArchive);
    expect(refused.status).toBe(200);
    expect(refused.json).toMatchObject([
      { id: 1, error: { code: -32045, data: { archiveLabel: "eth-archive" } } },
      { id: 2, result: "0x1" },
      { id: 3, error: { code: -32045 } },
    ]);
    // each refusal names the request, as every refusal does
    const requestId = refused.headers["x-request-id"];
    expect(requestId).toBeTruthy();
    expect((refused.json as { error?: { data: { requestId?: string } } }[])[0]?.error?.data.requestId).toBe(
      requestId,
    );
    expect(refused.text).not.toContain("BlockOutOfRangeError");
    expect(balanceCalls(archiveNode)).toBe(archiveBefore + 2);
    // a call the gateway refused costs nothing: only eth_chainId was served
    const refusedUnits = await units();
    await batch(KEYS.noArchive);
    expect(await units()).toBe(refusedUnits + 5);
  });

  it("the operator sees each rule at work in gateway_answer_rules_total", async () => {
    expect(
      await gw.metric("gateway_answer_rules_total", { label: "eth", rule: "archive_direct" }),
    ).toBeGreaterThan(0);
    expect(
      await gw.metric("gateway_answer_rules_total", { label: "eth", rule: "archive_again" }),
    ).toBeGreaterThan(0);
    expect(
      await gw.metric("gateway_answer_rules_total", { label: "eth", rule: "archive_required" }),
    ).toBeGreaterThan(0);
    expect(await gw.metric("gateway_served_head", { label: "eth" })).toBe(300);
  });

  it("a read at the head stays on the full node, whatever the key", async () => {
    const archiveBefore = balanceCalls(archiveNode);
    const r = await getBalance(KEYS.noArchive, "latest");
    expect(r.json).toEqual({ jsonrpc: "2.0", id: 7, result: BALANCE });
    expect(balanceCalls(archiveNode)).toBe(archiveBefore);
  });

  it("archive nodes out of rotation fail only the reads that need them, with a reason naming eth-archive", async () => {
    const archiveMember = gw.gateway.upstreams.group("eth-archive", "/")?.members[0];
    expect(archiveMember).toBeDefined();
    archiveMember?.health.cordon(true);
    try {
      const single = await getBalance(KEYS.all, "0xb");
      expect(single.status).toBe(503);
      expect(single.json).toMatchObject({
        id: 7,
        error: {
          data: {
            code: "NO_UPSTREAM",
            archiveLabel: "eth-archive",
            reason: expect.stringContaining("eth-archive"),
          },
        },
      });
      const units = () => gw.metric("gateway_compute_units_total", { label: "eth" });
      const unitsBefore = await units();
      const batch = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [ACCOUNT, "0xa"] },
          { jsonrpc: "2.0", id: 2, method: "eth_blockNumber", params: [] },
          { jsonrpc: "2.0", id: 3, method: "eth_getBalance", params: [ACCOUNT, "latest"] },
        ]),
        headers: { "content-type": "application/json" },
      });
      expect(batch.status).toBe(200);
      expect(batch.json).toEqual([
        {
          jsonrpc: "2.0",
          id: 1,
          error: {
            code: -32011,
            message: expect.any(String),
            data: expect.objectContaining({
              code: "NO_UPSTREAM",
              archiveLabel: "eth-archive",
              reason: expect.stringContaining("eth-archive"),
              requestId: batch.headers["x-request-id"],
            }),
          },
        },
        { jsonrpc: "2.0", id: 2, result: "0x12c" },
        { jsonrpc: "2.0", id: 3, result: BALANCE },
      ]);
      expect(batch.text).not.toContain("BlockOutOfRangeError");
      // the full node's two answers, eth_blockNumber's 10 units and eth_getBalance's 20: the gateway's own
      // error costs nothing
      await eventually(async () => (await units()) > unitsBefore, 2_000, "the batch's units");
      expect(await units()).toBe(unitsBefore + 10 + 20);
    } finally {
      archiveMember?.health.cordon(false);
    }
    await eventually(
      () => archiveMember?.health.inRotation === true,
      5_000,
      "the archive node back in rotation",
    );
  });

  it("with no archive upstream at all, a batch's old read gets the single read's NO_UPSTREAM, not ARCHIVE_REQUIRED", async () => {
    const fullOnly = await startGateway({
      upstreams: { eth: pair.upstreams.eth ?? [] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    try {
      await servingAt300(fullOnly);
      const single = await fullOnly.call("eth", `/${KEYS.all}`, {
        body: rpcBody("eth_getBalance", [ACCOUNT, "0xa"], 7),
      });
      expect(single.status).toBe(503);
      const expected = {
        code: "NO_UPSTREAM",
        archiveLabel: "eth-archive",
        reason: "this read needs an archive node, and eth-archive has no upstream",
      };
      expect(single.json).toMatchObject({ id: 7, error: { code: -32011, data: expected } });
      const batch = await fullOnly.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [ACCOUNT, "0xa"] },
          { jsonrpc: "2.0", id: 2, method: "eth_blockNumber", params: [] },
        ]),
        headers: { "content-type": "application/json" },
      });
      expect(batch.status).toBe(200);
      expect(batch.json).toMatchObject([
        { id: 1, error: { code: -32011, data: expected } },
        { id: 2, result: "0x12c" },
      ]);
    } finally {
      await fullOnly.close();
    }
  });
});

// A read a full node refuses and the archive then answers costs the archive's price, known only once the
// full node answered: the quota holds it at that price from the start, and settles what it cost. Held at
// the full node's, concurrent such reads each passed the quota by the archive surcharge (5,960 units
// served of a 5,000 day's in one check).
describe("a read that may reach the archive holds the quota at the archive's price (real anvil)", () => {
  const KEY = "FNarchiveQuota0000000000000000";
  let pair: ArchivePair;
  let gw: RunningGateway;

  beforeAll(async () => {
    ({ pair, gw } = await pairGateway(KEY, { dailyQuota: 100 }));
  });
  afterAll(async () => {
    await gw?.close();
    await pair?.stop();
  });

  it("concurrent reads the full node refuses: served no further than the day's quota, each at the archive's price", async () => {
    // 60 of the day's 100 units spent; eth_getBalance costs 20 at a full node, 40 at the archive
    for (let i = 0; i < 6; i++)
      expect((await gw.call("eth", `/${KEY}`, { body: rpcBody("eth_blockNumber") })).status).toBe(200);
    const reads = await Promise.all(
      [1, 2, 3].map((id) =>
        gw.call("eth", `/${KEY}`, { body: rpcBody("eth_getBalance", [ACCOUNT, "0x12b"], id) }),
      ),
    );
    const served = reads.filter((r) => r.status === 200);
    for (const r of served) expect(r.headers["x-upstream-tier"]).toBe("archive");
    expect(served).toHaveLength(1);
    expect(reads.filter((r) => r.status === 402)).toHaveLength(2);
    // and what was served is what was counted: 60 + 40
    const units = async () =>
      (await gw.metric("gateway_compute_units_total", { label: "eth" })) +
      (await gw.metric("gateway_compute_units_total", { label: "eth-archive" }));
    await eventually(async () => (await units()) === 100, 2000, "100 units counted");
  });
});

// On a plan whose cached answers cost a share of their price, a batch's calls are priced each at its own:
// an archive node's answer (kept or fresh) at the archive factor, a call with no node call of its own at
// the share, both together at both. Scaling the batch's price by the share of its weight spread one call's
// archive price over the others (103 units for what costs 95, 41 for 43).
describe("a batch partly answered from the cache, on a plan with a cachedShare, prices each call at its own", () => {
  const KEY = "FNarchiveHalf00000000000000000";
  let pair: ArchivePair;
  let gw: RunningGateway;
  const units = async () =>
    (await gw.metric("gateway_compute_units_total", { label: "eth" })) +
    (await gw.metric("gateway_compute_units_total", { label: "eth-archive" }));
  const send = (body: unknown) => gw.call("eth", `/${KEY}`, { body: JSON.stringify(body) });
  const call = (method: string, params: unknown[], id: number) => ({ jsonrpc: "2.0", id, method, params });
  /** What a request cost, once its units are counted. */
  const costOf = async (body: unknown): Promise<number> => {
    const before = await units();
    const answer = await send(body);
    expect(answer.status).toBe(200);
    await eventually(async () => (await units()) > before, 2000, "the request's units");
    // the answer said what it cost
    expect(Number(answer.headers["x-compute-units"])).toBe((await units()) - before);
    return (await units()) - before;
  };

  beforeAll(async () => {
    ({ pair, gw } = await pairGateway(KEY, { cachedShare: 0.5 }, true));
  });
  afterAll(async () => {
    await gw?.close();
    await pair?.stop();
  });

  it("a kept archive answer beside a fresh full call, and a kept full answer beside a fresh archive call", async () => {
    // blocks below anvil's finalized (its head less 64): answers kept for good, whatever the head's epoch
    // does between the calls (a probe every 100 ms that reads the two nodes' head blocks)
    const oldBalance = (id: number, block = "0xc8") => call("eth_getBalance", [ACCOUNT, block], id);
    // eth_getBalance: 20 at a full node, 40 at the archive; its kept archive answer at half, 20
    expect(await costOf(oldBalance(1))).toBe(40);
    expect(await costOf(oldBalance(2))).toBe(20);
    // with a fresh eth_getLogs (75): 20 + 75
    expect(
      await costOf([oldBalance(3), call("eth_getLogs", [{ fromBlock: "0x12c", toBlock: "0x12c" }], 4)]),
    ).toBe(95);
    // a kept eth_chainId (5, at half 2.5) beside a fresh archive read (40): 42.5, rounded
    expect(await costOf(call("eth_chainId", [], 5))).toBe(5);
    expect(await costOf([call("eth_chainId", [], 6), oldBalance(7, "0xc7")])).toBe(43);
  });
});

// A batch's call refused ARCHIVE_REQUIRED costs nothing, and it takes nothing off the calls of its method
// that were served: a served eth_getBalance beside a refused one was priced at nothing, on a plan with a
// cachedShare, when the batch also held a kept answer (the refused call was taken off twice).
describe("a batch with an ARCHIVE_REQUIRED call and a kept answer, on a plan with a cachedShare", () => {
  const KEY = "FNnoArchiveHalf000000000000000";
  let pair: ArchivePair;
  let gw: RunningGateway;

  beforeAll(async () => {
    ({ pair, gw } = await pairGateway(KEY, { cachedShare: 0.5, archive: false }, true));
  });
  afterAll(async () => {
    await gw?.close();
    await pair?.stop();
  });

  it("prices the served call of the refused call's method at its own price", async () => {
    const send = (body: unknown) => gw.call("eth", `/${KEY}`, { body: JSON.stringify(body) });
    const call = (method: string, params: unknown[], id: number) => ({ jsonrpc: "2.0", id, method, params });
    expect((await send(call("eth_chainId", [], 1))).headers["x-compute-units"]).toBe("5");
    const before = await gw.metric("gateway_compute_units_total", { label: "eth" });
    const answer = await send([
      call("eth_chainId", [], 2),
      // the pruned full node no longer has it, and the key has no archive access
      call("eth_getBalance", [ACCOUNT, "0x12b"], 3),
      call("eth_getBalance", [ACCOUNT, "latest"], 4),
    ]);
    expect(answer.json).toMatchObject([
      { id: 2, result: "0x1" },
      { id: 3, error: { data: { code: "ARCHIVE_REQUIRED" } } },
      { id: 4, result: BALANCE },
    ]);
    // the kept eth_chainId at half (2.5), the refused read at nothing, the served one at 20
    expect(answer.headers["x-compute-units"]).toBe(String(Math.round(2.5 + 20)));
    await eventually(
      async () => (await gw.metric("gateway_compute_units_total", { label: "eth" })) > before,
      2000,
      "the batch's units",
    );
    expect(await gw.metric("gateway_compute_units_total", { label: "eth" })).toBe(
      before + Math.round(2.5 + 20),
    );
  });
});
