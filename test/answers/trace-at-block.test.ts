import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { readNeed } from "../../src/answers/read-need.js";
import { DEFAULT_HEALTH, DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PassedCall } from "../../src/jsonrpc/check.js";
import { checkMessage } from "../../src/jsonrpc/message.js";
import { PlanBook } from "../../src/plans/plan-terms.js";
import type { JsonRpcPolicy, Mount } from "../../src/registry/types.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { type ArchivePair, startArchivePair } from "../support/archive-pair.js";
import { eventually } from "../support/eventually.js";
import {
  KEYS,
  type RunningGateway,
  rpcBody,
  startGateway,
  TEST_KEYS,
  TEST_PLANS,
} from "../support/gateway.js";
import { type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// Traces and debug reads at a block (registry `reads.at`, `reads.archive.state`; docs/upstreams.md, "Every
// block param counts" and "Archive"): a trace of an old block runs on state a pruned full node no longer
// has, so it goes to the archive node for a key with archive access and is ARCHIVE_REQUIRED for any other,
// never the full node's raw error; and a trace at a block just mined goes only to a node that has it.

const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const OTHER = "0x70997970C51812dc3A010C7d50e0e9920d4dC15d";
const TX = { from: ACCOUNT, to: OTHER, value: "0x1" };
const HASH = `0x${"ab".repeat(32)}`;
/** A key with the dedicated methods (debug_*, trace_*), on a plan like dedicated but without archive nodes. */
const DEDICATED_NO_ARCHIVE = "FNtraceNoArchive000000000000000";

function ethMount(): Mount {
  const mount = endpointsByLabel.get("eth")?.mounts.find((m) => m.policy.id === "ethereum");
  if (mount === undefined) throw new Error("eth mounts no ethereum");
  return mount;
}

function need(method: string, params: unknown[]) {
  const mount = ethMount();
  const dialect = mount.policy.jsonrpc as JsonRpcPolicy;
  const rules = {
    policy: dialect,
    plan: new PlanBook(DEFAULT_PLANS).terms("dedicated"),
    support: { email: "", dedicatedNodeUrl: "" },
    transport: "http" as const,
  };
  const body = { jsonrpc: "2.0", id: 1, method, params };
  const { checked } = checkMessage(JSON.stringify(body), rules, { maxBatch: 100, maxJsonDepth: 64 });
  const passed = checked.filter((c): c is PassedCall => c.ok);
  expect(passed.length, method).toBe(1);
  return readNeed(dialect.reads, mount.head, passed, true);
}

/** Each method with its params naming `block`, in the place its software takes it. */
const AT_BLOCK: readonly [string, (block: unknown) => unknown[], boolean][] = [
  // [method, params, a read of state (archive)]
  ["debug_traceCall", (b) => [TX, b, {}], true],
  [
    "debug_traceCallMany",
    (b) => [[{ transactions: [TX] }], { blockNumber: b, transactionIndex: 0 }, {}],
    true,
  ],
  ["debug_traceBlockByNumber", (b) => [b, {}], true],
  ["debug_storageRangeAt", (b) => [b, 0, OTHER, "0x00", 10], true],
  ["debug_accountRange", (b) => [b, "0x00", 10, true, true, false], true],
  ["trace_call", (b) => [TX, ["trace"], b], true],
  ["trace_callMany", (b) => [[[TX, ["trace"]]], b], true],
  ["trace_replayBlockTransactions", (b) => [b, ["trace"]], true],
  ["trace_block", (b) => [b], true],
  ["eth_getStorageValues", (b) => [{ [OTHER]: ["0x00"] }, b], true],
  ["eth_getBlockAccessList", (b) => [b], false],
  ["debug_getRawHeader", (b) => [b], false],
  ["debug_getRawBlock", (b) => [b], false],
  ["debug_getRawReceipts", (b) => [b], false],
];

describe("the registry places the block param of traces and debug reads (ethereum interface)", () => {
  it("a numbered block is one a node must have, and a read of its state one an archive may answer", () => {
    for (const [method, params, state] of AT_BLOCK) {
      const got = need(method, params("0x14"));
      expect(got?.highestBlock, method).toBe(20);
      expect(got?.atHead, method).toBe(false);
      expect(got?.stateCalls.length, method).toBe(state ? 1 : 0);
    }
  });

  it("a head tag reads at the head; a hash is read whole; so is debug_traceBlockByHash's", () => {
    for (const [method, params] of AT_BLOCK) {
      expect(need(method, params("latest"))?.atHead, method).toBe(true);
      expect(need(method, params(HASH))?.byHash, method).toBe(true);
    }
    for (const method of ["debug_traceBlockByHash", "debug_intermediateRoots"]) {
      const got = need(method, [HASH, {}]);
      expect(got?.byHash, method).toBe(true);
      expect(got?.stateByHash, method).toBe(true);
    }
  });

  it("a trace left without its block reads at the head, as the node does (latest)", () => {
    expect(need("debug_traceCall", [TX])?.atHead).toBe(true);
    expect(need("trace_call", [TX, ["trace"]])?.atHead).toBe(true);
    expect(need("debug_traceCallMany", [[{ transactions: [TX] }]])?.atHead).toBe(true);
  });

  it("every EVM endpoint that serves the ethereum interface shares the rules (eth, bsc, avax, atleta, zil)", () => {
    for (const label of ["eth", "bsc", "avax", "atleta", "zil"]) {
      const mount = endpointsByLabel.get(label)?.mounts.find((m) => m.policy.id.startsWith("ethereum"));
      const reads = (mount?.policy.jsonrpc as JsonRpcPolicy | undefined)?.reads;
      expect(reads?.at?.debug_traceCall, label).toBe(1);
      expect(reads?.archive?.state, label).toContain("debug_traceCall");
    }
  });
});

describe("traces at an old block reach the archive node, for keys with archive access only (real anvil)", () => {
  let pair: ArchivePair;
  let fullNode: RecordingNode;
  let archiveNode: RecordingNode;
  let gw: RunningGateway;
  const count = (node: RecordingNode, method: string) => node.calls.filter((c) => c.method === method).length;

  beforeAll(async () => {
    pair = await startArchivePair(300);
    ({ fullNode, archiveNode } = pair);
    gw = await startGateway({
      upstreams: pair.upstreams,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      plans: {
        ...TEST_PLANS,
        "dedicated-full": {
          ...PLAN_FIELDS,
          computeUnitRate: { perSecond: 20_000, burst: 40_000 },
          dedicatedMethods: true,
          archive: false,
        },
      },
      keys: [
        ...TEST_KEYS,
        {
          key: DEDICATED_NO_ARCHIVE,
          networks: "*",
          plan: "dedicated-full",
          archive: false,
          rate: { perSecond: 1000, burst: 1000 },
        },
      ],
    });
    await everyNodeInRotation(gw);
    await eventually(
      async () => (await gw.metric("gateway_upstream_head", { label: "eth" })) === 300,
      5000,
      "head",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await pair?.stop();
  });

  const send = (key: string, method: string, params: unknown[]) =>
    gw.call("eth", `/${key}`, { body: rpcBody(method, params, 7) });

  it("debug_traceCall at an old block goes to the archive at once; at a recent one the full node refuses, once more", async () => {
    for (const [block, fullAsked] of [
      ["0x14", 0],
      ["0x12b", 1],
    ] as const) {
      const [fullBefore, archiveBefore] = [
        count(fullNode, "debug_traceCall"),
        count(archiveNode, "debug_traceCall"),
      ];
      const r = await send(KEYS.dedicated, "debug_traceCall", [TX, block, {}]);
      expect(r.json, block).toMatchObject({ id: 7, result: { failed: false, gas: 21000 } });
      expect(r.headers["x-upstream-tier"], block).toBe("archive");
      expect(count(fullNode, "debug_traceCall"), block).toBe(fullBefore + fullAsked);
      expect(count(archiveNode, "debug_traceCall"), block).toBe(archiveBefore + 1);
    }
  });

  it("debug_traceBlockByNumber, trace_block, trace_replayBlockTransactions and eth_getStorageValues at an old block", async () => {
    for (const [method, params] of [
      ["debug_traceBlockByNumber", ["0x14", {}]],
      ["trace_block", ["0x14"]],
      ["trace_replayBlockTransactions", ["0x14", ["trace"]]],
      ["eth_getStorageValues", [{ [OTHER]: [`0x${"00".repeat(32)}`] }, "0x14"]],
    ] as const) {
      const [fullBefore, archiveBefore] = [count(fullNode, method), count(archiveNode, method)];
      const r = await send(KEYS.dedicated, method, [...params]);
      expect(r.status, method).toBe(200);
      expect((r.json as { error?: unknown }).error, `${method}: ${r.text}`).toBeUndefined();
      expect(r.headers["x-upstream-tier"], method).toBe("archive");
      expect(count(fullNode, method), method).toBe(fullBefore);
      expect(count(archiveNode, method), method).toBe(archiveBefore + 1);
    }
  });

  it("a dedicated key without archive access gets ARCHIVE_REQUIRED, never the node's BlockOutOfRangeError", async () => {
    const archiveBefore = count(archiveNode, "debug_traceCall");
    for (const block of ["0x14", "0x12b"]) {
      const r = await send(DEDICATED_NO_ARCHIVE, "debug_traceCall", [TX, block, {}]);
      expect(r.status, `${block}: ${r.text}`).toBe(403);
      expect(r.json, block).toMatchObject({
        id: 7,
        error: { code: -32045, data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" } },
      });
      expect(r.text).not.toContain("BlockOutOfRangeError");
    }
    expect(count(archiveNode, "debug_traceCall")).toBe(archiveBefore);
  });

  it("a trace at the head stays on the full node, whatever the key", async () => {
    const archiveBefore = count(archiveNode, "debug_traceCall");
    for (const key of [KEYS.dedicated, DEDICATED_NO_ARCHIVE]) {
      const r = await send(key, "debug_traceCall", [TX, "latest", {}]);
      expect(r.json).toMatchObject({ id: 7, result: { failed: false } });
    }
    expect(count(archiveNode, "debug_traceCall")).toBe(archiveBefore);
  });
});

describe("a trace at a block or of a transaction just mined goes only to a node that has it (real anvil, two nodes a block apart)", () => {
  let ahead: Anvil;
  let behind: Anvil;
  let aheadNode: RecordingNode;
  let behindNode: RecordingNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    [ahead, behind] = await Promise.all([startAnvil({ chainId: 1 }), startAnvil({ chainId: 1 })]);
    await Promise.all([ahead.rpc("anvil_mine", ["0x12d"]), behind.rpc("anvil_mine", ["0x12c"])]);
    [aheadNode, behindNode] = await Promise.all([
      startRecordingNode(ahead.url),
      startRecordingNode(behind.url),
    ]);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: aheadNode.url, name: "ahead" },
          { url: behindNode.url, name: "behind" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw);
    await eventually(
      async () => (await gw.metric("gateway_served_head", { label: "eth" })) === 301,
      5000,
      "head",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([aheadNode?.close(), behindNode?.close()]);
    await Promise.all([ahead?.stop(), behind?.stop()]);
  });

  it("debug_traceCall and debug_traceBlockByNumber at block 301: every answer the node at 301's", async () => {
    for (const [method, params] of [
      ["debug_traceCall", [TX, "0x12d", {}]],
      ["debug_traceBlockByNumber", ["0x12d", {}]],
    ] as const) {
      for (let i = 0; i < 8; i++) {
        const r = await gw.call("eth", `/${KEYS.dedicated}`, { body: rpcBody(method, [...params], i) });
        expect((r.json as { error?: unknown }).error, `${method}: ${r.text}`).toBeUndefined();
      }
      expect(
        behindNode.calls.filter((c) => c.method === method),
        method,
      ).toHaveLength(0);
    }
  });

  it("a trace of a transaction just mined, by its hash, goes only to a node at the served head", async () => {
    // mined on the node ahead alone (block 302), the one behind a block later (301)
    const hash = await ahead.rpc<string>("eth_sendTransaction", [TX]);
    await behind.rpc("anvil_mine", ["0x1"]);
    await eventually(
      async () => (await gw.metric("gateway_served_head", { label: "eth" })) === 302,
      5000,
      "head",
    );
    for (const [method, params] of [
      ["debug_traceTransaction", [hash, {}]],
      ["trace_transaction", [hash]],
    ] as const) {
      for (let i = 0; i < 8; i++) {
        const r = await gw.call("eth", `/${KEYS.dedicated}`, { body: rpcBody(method, [...params], i) });
        expect((r.json as { error?: unknown }).error, `${method}: ${r.text}`).toBeUndefined();
        // the node that has it traces a 21,000-gas transfer; anvil behind answers an empty trace (geth: not found)
        const result = (r.json as { result?: unknown }).result;
        if (method === "debug_traceTransaction") expect(result, method).toMatchObject({ gas: 21000 });
        else expect((result as unknown[]).length, method).toBeGreaterThan(0);
      }
      expect(
        behindNode.calls.filter((c) => c.method === method),
        method,
      ).toHaveLength(0);
    }
  });
});
