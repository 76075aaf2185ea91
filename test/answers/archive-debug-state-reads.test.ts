import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, startGateway, TEST_PLANS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// Two more reads of a block's state, on `eth` (a full node keeping its last 128 blocks' state) beside
// `eth-archive`: geth's debug_getModifiedAccountsByNumber / ByHash open the state tries of both blocks
// (eth/api_debug.go getModifiedAccounts: trie.NewStateTrie of each root), and Reth's trace_rawTransaction
// runs the transaction on its block's state (evm_env_at, as trace_call). A full node answers an older one
// with geth's "missing trie node …" (trie.MissingNodeError). Neither was a state read to the registry: an
// archive key got the full node's error rather than the archive node's answer, and a key without archive
// access the raw error rather than ARCHIVE_REQUIRED.

const HEIGHT = 21_000_000;
const OLD = HEIGHT - 5_000;
const hex = (n: number) => `0x${n.toString(16)}`;
const blockHash = (n: number) => `0x${n.toString(16).padStart(8, "0")}${"ef".repeat(28)}`;
const heightOf = (hash: unknown) => Number.parseInt(String(hash).slice(2, 10), 16);
const RAW = `0x02f866018001843b9aca0082520894${"00".repeat(18)}beef0180c080a0${"35".repeat(32)}a0${"1b".repeat(32)}`;
const ARCHIVE = "FNtestDedicatedArchive000000000";
const FULL_ONLY = "FNtestDedicatedNoArchive0000000";

/** A full node's state window: geth's error for a root it no longer has. */
function stateAt(state: NodeState, pruned: boolean, height: number): void {
  if (pruned && height < state.height - 128)
    throw new NodeRejection(-32000, `missing trie node ${"ab".repeat(32)} (path ) <nil>`);
}

function answers(pruned: boolean): Record<string, TypicalAnswer> {
  return {
    debug_getModifiedAccountsByNumber: {
      result: (state, params) => {
        const [start, end] = params as [number, number | undefined];
        stateAt(state, pruned, start - (end === undefined ? 1 : 0));
        return [`0x${"11".repeat(20)}`];
      },
    },
    debug_getModifiedAccountsByHash: {
      result: (state, params) => {
        const [start, end] = params as [string, string | undefined];
        stateAt(state, pruned, heightOf(start) - (end === undefined ? 1 : 0));
        return [`0x${"22".repeat(20)}`];
      },
    },
    trace_rawTransaction: {
      result: (state, params) => {
        stateAt(state, pruned, Number(BigInt(String((params as unknown[])[2] ?? hex(state.height)))));
        return { output: "0x", stateDiff: null, trace: [], vmTrace: null };
      },
    },
  };
}

describe("state diffs and raw-transaction traces at an old block, on a full label beside its archive", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  beforeAll(async () => {
    const upstreams: Record<string, { url: string; name: string }[]> = {};
    for (const label of ["eth", "eth-archive"]) {
      const endpoint = endpointsByLabel.get(label) as Endpoint;
      const node = await startLoopbackNode(
        softwareNode(endpoint, nodeState(endpoint, HEIGHT), [""], { answers: answers(label === "eth") }),
      );
      nodes.push(node);
      upstreams[label] = [{ url: node.url, name: label }];
    }
    gw = await startGateway({
      upstreams,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      plans: {
        ...TEST_PLANS,
        "dedicated-full": {
          ...(TEST_PLANS?.dedicated as NonNullable<typeof TEST_PLANS>[string]),
          archive: false,
        },
      },
      keys: [
        { key: ARCHIVE, networks: "*", plan: "dedicated", rate: { perSecond: 1000, burst: 1000 } },
        { key: FULL_ONLY, networks: "*", plan: "dedicated-full", rate: { perSecond: 1000, burst: 1000 } },
      ],
    });
    await eventually(
      () => gw.gateway.upstreams.groups().every((g) => g.served.height === HEIGHT),
      5000,
      "each label's served head",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  const reads: [string, unknown[]][] = [
    ["debug_getModifiedAccountsByNumber", [OLD, OLD + 1]],
    ["debug_getModifiedAccountsByNumber", [OLD]],
    ["debug_getModifiedAccountsByHash", [blockHash(OLD)]],
    ["trace_rawTransaction", [RAW, ["trace"], hex(OLD)]],
  ];

  it("an archive key's read is the archive node's answer", async () => {
    for (const [method, params] of reads) {
      const answer = await gw.call("eth", `/${ARCHIVE}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 3, method, params }),
      });
      expect(answer.json, `${method} ${JSON.stringify(params)}`).toMatchObject({
        id: 3,
        result: expect.anything(),
      });
      expect(answer.headers["x-upstream-tier"], method).toBe("archive");
    }
  });

  it("another key's read is ARCHIVE_REQUIRED, never the full node's missing trie node", async () => {
    for (const [method, params] of reads) {
      const answer = await gw.call("eth", `/${FULL_ONLY}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 4, method, params }),
      });
      expect(answer.json, `${method} ${JSON.stringify(params)}`).toMatchObject({
        id: 4,
        error: { data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" } },
      });
    }
  });
});
