import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type ArchivePair, startArchivePair } from "../support/archive-pair.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import type { RecordingNode } from "../support/recording-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A key without archive access reading state older than a full node keeps (`eth`'s fullHistory is 128, the
// pair's head 300): the single read is ARCHIVE_REQUIRED at once, never sent to a full node. The same read in
// a batch is refused the same way, in its own place, and the batch's other calls go to the full node as
// usual. Sent to the full node, it got that node's own answer: a pruned node's error, or, from a node that
// answers what it does not have, wrong state.

const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const BALANCE = "0x21e19e0c9bab2400000";
const JSON_HEADERS = { "content-type": "application/json" };

/** The full node's eth_getBalance calls at `block`. */
const balanceAt = (node: RecordingNode, block: string) =>
  node.calls.filter((c) => c.method === "eth_getBalance" && Array.isArray(c.params) && c.params[1] === block)
    .length;

/** A refusal's error without the request id each refusal names. */
function errorOf(answer: unknown): Record<string, unknown> {
  const error = (answer as { error: { code: number; message: string; data: Record<string, unknown> } }).error;
  const { requestId: _, ...data } = error.data;
  return { ...error, data };
}

describe.each([
  ["without the cache", false],
  ["with the cache", true],
])(
  "a key without archive access, a batch's read older than a full node keeps (real anvil, %s)",
  (_, cache) => {
    let pair: ArchivePair;
    let gw: RunningGateway;

    beforeAll(async () => {
      pair = await startArchivePair(300);
      gw = await startGateway({
        upstreams: pair.upstreams,
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
        cache: { ...DEFAULT_CACHE, enabled: cache },
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

    const batch = (calls: unknown[]) =>
      gw.call("eth", `/${KEYS.noArchive}`, { body: JSON.stringify(calls), headers: JSON_HEADERS });

    it("is ARCHIVE_REQUIRED in its own answer, as the single read is, and never reaches a node; the rest are answered", async () => {
      const single = await gw.call("eth", `/${KEYS.noArchive}`, {
        body: rpcBody("eth_getBalance", [ACCOUNT, "0x2"], 1),
      });
      expect(single.status).toBe(403);
      expect(balanceAt(pair.fullNode, "0x2")).toBe(0);

      const reads = (node: RecordingNode) =>
        node.calls.filter((c) => c.method === "eth_getBalance" || c.method === "eth_getTransactionCount")
          .length;
      const archiveBefore = reads(pair.archiveNode);
      const r = await batch([
        { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [ACCOUNT, "0x2"] },
        { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
        { jsonrpc: "2.0", id: 3, method: "eth_getBalance", params: [ACCOUNT, "latest"] },
        {
          jsonrpc: "2.0",
          id: 4,
          method: "eth_getTransactionCount",
          params: [ACCOUNT, { blockNumber: "0x3" }],
        },
      ]);
      expect(r.status).toBe(200);
      // a batch's answers come in any order (JSON-RPC 2.0 §6): read by id
      const answers = [...(r.json as { id: number }[])].sort((x, y) => x.id - y.id) as unknown[];
      expect(answers).toMatchObject([
        { jsonrpc: "2.0", id: 1, error: { code: -32045 } },
        { jsonrpc: "2.0", id: 2, result: "0x1" },
        { jsonrpc: "2.0", id: 3, result: BALANCE },
        { jsonrpc: "2.0", id: 4, error: { code: -32045 } },
      ]);
      // the same error the single read gets: its code, message and data (the archive label, the reason)
      expect(errorOf(answers[0])).toEqual(errorOf(single.json));
      expect(errorOf(answers[0])).toMatchObject({
        data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" },
      });
      // each refusal names the request, as every refusal does
      expect((answers[0] as { error: { data: { requestId?: string } } }).error.data.requestId).toBe(
        r.headers["x-request-id"],
      );
      expect(r.text).not.toContain("BlockOutOfRangeError");
      // neither the full node nor the archive node was asked the old reads
      expect(balanceAt(pair.fullNode, "0x2")).toBe(0);
      expect(pair.fullNode.calls.some((c) => c.method === "eth_getTransactionCount")).toBe(false);
      expect(reads(pair.archiveNode)).toBe(archiveBefore);
    });

    it("beside a notification that reads state, its refusal is the answer (the node answers a notification with nothing)", async () => {
      const r = await batch([
        { jsonrpc: "2.0", method: "eth_getBalance", params: [ACCOUNT, "0x12a"] },
        { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [ACCOUNT, "0x2"] },
      ]);
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject([{ id: 1, error: { code: -32045, data: { code: "ARCHIVE_REQUIRED" } } }]);
    });

    it("a batch of old reads alone asks no node at all", async () => {
      const fullBefore = balanceAt(pair.fullNode, "0x5") + balanceAt(pair.fullNode, "earliest");
      const r = await batch([
        { jsonrpc: "2.0", id: "a", method: "eth_getBalance", params: [ACCOUNT, "0x5"] },
        { jsonrpc: "2.0", id: "b", method: "eth_getBalance", params: [ACCOUNT, "earliest"] },
      ]);
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject([
        { id: "a", error: { code: -32045, data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" } } },
        { id: "b", error: { code: -32045, data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" } } },
      ]);
      expect(balanceAt(pair.fullNode, "0x5") + balanceAt(pair.fullNode, "earliest")).toBe(fullBefore);
      expect(fullBefore).toBe(0);
    });

    it("a recent read the full node no longer has is still asked of it, and refused by its answer", async () => {
      // 0x12b is within fullHistory: only the node can say it has no state there
      const before = balanceAt(pair.fullNode, "0x12b");
      const r = await batch([
        { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [ACCOUNT, "0x12b"] },
        { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: [ACCOUNT, "0x1"] },
      ]);
      expect(r.json).toMatchObject([
        { id: 1, error: { code: -32045 } },
        { id: 2, error: { code: -32045 } },
      ]);
      expect(balanceAt(pair.fullNode, "0x12b")).toBe(before + 1);
      expect(balanceAt(pair.fullNode, "0x1")).toBe(0);
    });

    it("a key with archive access still has the batch's old reads answered by the archive node", async () => {
      const r = await gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [ACCOUNT, "0x7"] },
          { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
        ]),
        headers: JSON_HEADERS,
      });
      expect(r.json).toEqual([
        { jsonrpc: "2.0", id: 1, result: BALANCE },
        { jsonrpc: "2.0", id: 2, result: "0x1" },
      ]);
      expect(balanceAt(pair.archiveNode, "0x7")).toBe(1);
    });
  },
);
