import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type ArchivePair, startArchivePair } from "../support/archive-pair.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { answeredSince, type RecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// The answer cache and the archive tier (docs/cache.md, "The key"): an archive node's answer is kept with
// its tier and served only to keys with archive access. A full node started with --prune-history behind
// `eth`, an archive node with the same 300 blocks behind `eth-archive` (real anvils, recorded).

const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const BALANCE = "0x21e19e0c9bab2400000";

describe("cached archive answers go to archive keys only (real anvil)", () => {
  let fullNode: RecordingNode;
  let archiveNode: RecordingNode;
  let pair: ArchivePair;
  let gw: RunningGateway;

  const balanceCalls = (node: RecordingNode) =>
    node.calls.filter((c) => c.method === "eth_getBalance").length;
  const getBalance = (key: string, block: string, id = 7) =>
    gw.call("eth", `/${key}`, { body: rpcBody("eth_getBalance", [ACCOUNT, block], id) });

  beforeAll(async () => {
    pair = await startArchivePair(300);
    ({ fullNode, archiveNode } = pair);
    gw = await startGateway({
      upstreams: pair.upstreams,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: DEFAULT_CACHE,
    });
    await everyNodeInRotation(gw);
    await eventually(
      async () => (await gw.metric("gateway_upstream_head", { label: "eth" })) === 300,
      5000,
      "head",
    );
    // the finalized height (anvil: 64 below the head) is known, so block 1 is final
    await eventually(
      () => answeredSince(fullNode, 0, ["finalized", false]),
      5000,
      "a finality probe answered",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await pair?.stop();
  });

  it("an archive key's old read is fetched from the archive node once, then served from the cache with its tier", async () => {
    const before = balanceCalls(archiveNode);
    const first = await getBalance(KEYS.all, "0x1", 1);
    const second = await getBalance(KEYS.all, "0x1", 2);
    expect(first.json).toEqual({ jsonrpc: "2.0", id: 1, result: BALANCE });
    expect(second.json).toEqual({ jsonrpc: "2.0", id: 2, result: BALANCE });
    expect([first.headers["x-cache"], second.headers["x-cache"]]).toEqual(["miss", "hit"]);
    expect(second.headers["x-upstream-tier"]).toBe("archive");
    expect(balanceCalls(archiveNode)).toBe(before + 1);
  });

  it("a key without archive access never gets the cached archive answer: ARCHIVE_REQUIRED, as without the cache", async () => {
    const r = await getBalance(KEYS.noArchive, "0x1");
    expect(r.status).toBe(403);
    expect((r.json as { error: { data?: { code?: string } } }).error.data?.code).toBe("ARCHIVE_REQUIRED");
    expect(r.text).not.toContain(BALANCE);
  });

  it("a batch's archive answers are kept as a single read's: asked again, the cache answers them, for archive keys only", async () => {
    const batch = (key: string) =>
      gw.call("eth", `/${key}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: "a", method: "eth_getBalance", params: [ACCOUNT, "0x2"] },
          { jsonrpc: "2.0", id: "b", method: "eth_getBalance", params: [ACCOUNT, "0x3"] },
          { jsonrpc: "2.0", id: "c", method: "eth_chainId", params: [] },
        ]),
        headers: { "content-type": "application/json" },
      });
    const answers = [
      { jsonrpc: "2.0", id: "a", result: BALANCE },
      { jsonrpc: "2.0", id: "b", result: BALANCE },
      { jsonrpc: "2.0", id: "c", result: "0x1" },
    ];
    const archiveBefore = balanceCalls(archiveNode);
    const first = await batch(KEYS.all);
    expect(first.json).toEqual(answers);
    expect(first.headers["x-upstream-tier"]).toBe("full+archive");
    expect(first.headers["x-cache"]).toBe("miss");
    expect(balanceCalls(archiveNode)).toBe(archiveBefore + 2);

    // the full node's own calls (not the prober's, every 100 ms)
    const fullBefore = balanceCalls(fullNode);
    const again = await batch(KEYS.all);
    expect(again.json).toEqual(answers);
    expect([again.headers["x-cache"], again.headers["x-upstream-tier"]]).toEqual(["hit", "full+archive"]);
    expect(balanceCalls(archiveNode)).toBe(archiveBefore + 2);
    expect(balanceCalls(fullNode)).toBe(fullBefore);

    // a key without archive access: its reads older than a full node keeps are refused at once (read by
    // id: a batch's answers come in any order), and no archive answer comes from the cache
    const refused = await batch(KEYS.noArchive);
    const byId = [...(refused.json as { id: string }[])].sort((x, y) => x.id.localeCompare(y.id));
    expect(byId).toMatchObject([
      { id: "a", error: { code: -32045, data: { archiveLabel: "eth-archive" } } },
      { id: "b", error: { code: -32045 } },
      { id: "c", result: "0x1" },
    ]);
    expect(refused.text).not.toContain(BALANCE);
    expect(balanceCalls(archiveNode)).toBe(archiveBefore + 2);
  });

  it("a key without archive access whose read is in flight in an archive key's batch gets ARCHIVE_REQUIRED, not its answer", async () => {
    // the archive node holds its answers: the single call arrives while the batch's is at it
    pair.archiveNode.delayMs = 800;
    try {
      const archiveBefore = balanceCalls(archiveNode);
      const batch = gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: "a", method: "eth_getBalance", params: [ACCOUNT, "0x6"] },
          { jsonrpc: "2.0", id: "c", method: "eth_chainId", params: [] },
        ]),
        headers: { "content-type": "application/json" },
      });
      await eventually(
        () => balanceCalls(archiveNode) > archiveBefore,
        3_000,
        "the batch at the archive node",
      );
      const single = await getBalance(KEYS.noArchive, "0x6", 7);
      expect(single.status).toBe(403);
      expect((single.json as { error: { data?: { code?: string } } }).error.data?.code).toBe(
        "ARCHIVE_REQUIRED",
      );
      expect(single.text).not.toContain(BALANCE);
      expect((await batch).json).toEqual([
        { jsonrpc: "2.0", id: "a", result: BALANCE },
        { jsonrpc: "2.0", id: "c", result: "0x1" },
      ]);
    } finally {
      pair.archiveNode.delayMs = 0;
    }
  });
});
