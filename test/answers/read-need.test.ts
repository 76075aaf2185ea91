import { describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { planRanges } from "../../src/answers/range-plan.js";
import { type ReadNeed, readNeed } from "../../src/answers/read-need.js";
import { restReadNeed } from "../../src/answers/rest-read-need.js";
import { DEFAULT_PLANS } from "../../src/config/defaults.js";
import type { PassedCall } from "../../src/jsonrpc/check.js";
import { checkMessage } from "../../src/jsonrpc/message.js";
import { PlanBook } from "../../src/plans/plan-terms.js";
import { matchRoute } from "../../src/registry/match-route.js";
import type { JsonRpcPolicy, Mount, RestReadRules, RouteNode } from "../../src/registry/types.js";

// What the registry's `reads` rules make of a message's calls (docs/upstreams.md, "Answers across nodes").
const mount = endpointsByLabel.get("eth")?.mounts[0] as Mount;

function need(body: unknown, label = "eth") {
  const at = label === "eth" ? mount : (endpointsByLabel.get(label)?.mounts[0] as Mount);
  const dialect = at.policy.jsonrpc as JsonRpcPolicy;
  const text = JSON.stringify(body);
  const rules = {
    policy: dialect,
    plan: new PlanBook(DEFAULT_PLANS).terms("dedicated"),
    support: { email: "", dedicatedNodeUrl: "" },
    transport: "http" as const,
  };
  const { checked, batch } = checkMessage(text, rules, { maxBatch: 100, maxJsonDepth: 64 });
  const passed = checked.filter((c): c is PassedCall => c.ok);
  return readNeed(dialect.reads, at.head, passed, !batch);
}
const call = (method: string, params: unknown[], id: unknown = 1) => ({ jsonrpc: "2.0", id, method, params });
const ADDRESS = `0x${"11".repeat(20)}`;

describe("readNeed", () => {
  it("the head call reads at the head, and its answer is the node's head", () => {
    const n = need(call("eth_blockNumber", []));
    expect(n?.atHead).toBe(true);
    expect(n?.learn).toEqual([{ id: undefined, path: ["result"], encoding: "hex-quantity", isHead: true }]);
  });

  it("a head tag, or the block param left out, reads at the head; a block read at the head shows its height", () => {
    for (const tag of ["latest", "pending", "safe", "finalized"]) {
      expect(need(call("eth_getBalance", ["0x00000000000000000000000000000000000000aa", tag]))?.atHead).toBe(
        true,
      );
    }
    expect(need(call("eth_getBalance", ["0x00000000000000000000000000000000000000aa"]))?.atHead).toBe(true);
    const block = need(call("eth_getBlockByNumber", ["latest", false]));
    expect(block?.learn[0]?.path).toEqual(["result", "number"]);
  });

  it("a transaction looked up by hash reads at the head: a node a block behind has not mined it", () => {
    const hash = `0x${"ab".repeat(32)}`;
    // and the block it was mined in, once it was, raises the label's head (registry heightIn)
    for (const method of ["eth_getTransactionReceipt", "eth_getTransactionByHash"])
      expect(need(call(method, [hash]))).toMatchObject({
        atHead: true,
        byHash: false,
        learn: [{ path: ["result", "blockNumber"], isHead: false }],
      });
    expect(
      need(
        call("tx", {
          tx_hash: "6zgh2u9DqHHiXzdy9ouTP7oGky2T4nugqzqt9wJZwNFm",
          sender_account_id: "a.near",
        } as never),
        "near",
      )?.atHead,
    ).toBe(true);
    // a block by hash is not a transaction by hash
    expect(need(call("eth_getBlockByHash", [hash, false]))).toMatchObject({ atHead: false, byHash: true });
  });

  it("a numbered block, plain or as EIP-1898's blockNumber, is the block a node must have", () => {
    expect(need(call("eth_getBlockByNumber", ["0x10", false]))).toMatchObject({
      atHead: false,
      highestBlock: 16,
    });
    expect(
      need(call("eth_call", [{ to: "0x00000000000000000000000000000000000000aa" }, { blockNumber: "0x20" }])),
    ).toMatchObject({ atHead: false, highestBlock: 32 });
  });

  it("`earliest` is block 0, a call without a block param needs nothing, a hash names no height; a batch needs its calls' highest", () => {
    // any node has block 0; a state read there may need an archive node (archive routing)
    expect(need(call("eth_getBlockByNumber", ["earliest", false]))).toMatchObject({
      highestBlock: 0,
      stateBlock: -1,
    });
    expect(
      need(
        call("eth_getBalance", ["0x00000000000000000000000000000000000000aa", { blockNumber: "earliest" }]),
      ),
    ).toMatchObject({ highestBlock: 0, stateBlock: 0 });
    // a state read by hash: only the node can say whether it still has that state (archive routing)
    expect(
      need(call("eth_getBalance", ["0x00000000000000000000000000000000000000aa", `0x${"ab".repeat(32)}`])),
    ).toMatchObject({ atHead: false, highestBlock: -1, stateByHash: true });
    expect(need(call("eth_chainId", []))).toBeUndefined();
    const batch = need([
      call("eth_getBlockByNumber", ["0x5", false], 1),
      call("eth_getBlockByNumber", ["0x9", false], 2),
      call("eth_blockNumber", [], "b"),
    ]);
    expect(batch).toMatchObject({ atHead: true, highestBlock: 9 });
    expect(batch?.learn[0]?.id).toBe('"b"');
  });
});

describe("readNeed on other dialects", () => {
  it("Bitcoin Core: a height names a block, a hash none; getblockcount is the head call", () => {
    expect(need(call("getblockhash", [812_345]), "btc")).toMatchObject({ highestBlock: 812_345 });
    expect(need(call("getblock", ["00".repeat(32)]), "btc")).toMatchObject({
      byHash: true,
      highestBlock: -1,
    });
    expect(need(call("getblockcount", []), "btc")).toMatchObject({ atHead: true });
  });

  it("Starknet: a block_id tag reads at the head, {block_number} names a block", () => {
    expect(need(call("starknet_getBlockWithTxHashes", ["latest"]), "starknet")).toMatchObject({
      atHead: true,
    });
    expect(need(call("starknet_getNonce", [{ block_number: 7 }, "0x1"]), "starknet")).toMatchObject({
      highestBlock: 7,
    });
    expect(
      need(call("starknet_getStorageAt", ["0x1", "0x2", { block_hash: "0x3" }]), "starknet"),
    ).toMatchObject({
      byHash: true,
    });
    // by name, as starknet.js sends its params
    const named = { block_id: { block_number: 7 }, contract_address: "0x1" };
    expect(need(call("starknet_getNonce", named as never), "starknet")).toMatchObject({ highestBlock: 7 });
    expect(
      need(call("starknet_getBlockWithTxHashes", { block_id: { block_hash: "0x3" } } as never), "starknet"),
    ).toMatchObject({ byHash: true });
  });

  it("nearcore: finality reads at the head, block_id names a block; Substrate: a hash is named, none left out is the head", () => {
    expect(need(call("block", { finality: "final" } as never), "near")).toMatchObject({ atHead: true });
    expect(need(call("block", { block_id: 99 } as never), "near")).toMatchObject({ highestBlock: 99 });
    // the legacy positional forms nearcore parses too: block [block_id], chunk [[block_id, shard_id]]
    expect(need(call("block", [99]), "near")).toMatchObject({ highestBlock: 99 });
    expect(need(call("block", ["9".repeat(44)]), "near")).toMatchObject({ highestBlock: -1 });
    expect(need(call("chunk", [[99, 0]]), "near")).toMatchObject({ highestBlock: 99 });
    // and chunk [chunk_id]: a chunk named by its hash, read as a block by hash is
    expect(need(call("chunk", ["9".repeat(44)]), "near")).toMatchObject({
      atHead: false,
      byHash: true,
      stateByHash: true,
    });
    // query's positional form, [path, data], reads at the latest block
    expect(need(call("query", ["account/a.near", ""]), "near")).toMatchObject({ atHead: true });
    expect(need(call("chain_getBlock", []), "dot")).toMatchObject({ atHead: true });
    // chain_getBlockHash takes a list of numbers too: a node must have the highest
    expect(need(call("chain_getBlockHash", [[100, "0x65"]]), "dot")).toMatchObject({ highestBlock: 101 });
    expect(need(call("chain_getBlockHash", [[100, 101]]), "dot")).toMatchObject({ atHead: false });
    // as long a list as a body may hold is read without passing the call stack's bound
    const long = [...Array.from({ length: 126_000 }, () => 0), 7];
    expect(need(call("chain_getBlockHash", [long]), "dot")).toMatchObject({ highestBlock: 7 });
    expect(need(call("state_getStorage", ["0x00", `0x${"ab".repeat(32)}`]), "dot")).toMatchObject({
      stateByHash: true,
    });
  });
});

describe("a range to a settled tag (eth_getLogs to safe or finalized)", () => {
  const logs = (toBlock: string, fromBlock = "0x0") => call("eth_getLogs", [{ fromBlock, toBlock }]);
  const plan = (toBlock: string, finalized: number, head = 20_000) =>
    planRanges(need(logs(toBlock), "eth") as ReadNeed, head, undefined, finalized);

  it("to finalized: split up to the finalized height the prober read; unknown, counted to the head and sent as is", () => {
    expect(plan("finalized", 19_936).split).toMatchObject({ from: 0, to: 19_936 });
    expect(plan("finalized", 19_936).split?.tail).toBeUndefined();
    expect(plan("finalized", -1).split).toBeUndefined();
  });

  it("to safe: split up to the finalized height, the rest to the tag; counted to the head for the refusal limit", () => {
    expect(plan("safe", 19_936).split).toMatchObject({
      from: 0,
      to: 19_935,
      tail: { from: 19_936, to: "safe" },
    });
    expect(plan("safe", -1).split).toBeUndefined();
    expect(() => plan("safe", 1_000, 150_000)).toThrow("block range");
  });
});

describe("tags in any case, and limits a deployment sets below the registry's", () => {
  const logs = (fromBlock: string, toBlock: string) => call("eth_getLogs", [{ fromBlock, toBlock }]);
  const plan = (
    body: unknown,
    head = 3_000,
    limits?: Record<string, { splitAbove?: number; refuseAbove?: number }>,
  ) => planRanges(need(body, "eth") as ReadNeed, head, limits as never);

  it("LATEST and Earliest are the head and genesis, as alloy's nodes read them: the range is split or refused", () => {
    expect(plan(logs("0x0", "LATEST")).split).toMatchObject({ from: 0, to: 3_000 });
    expect(plan(logs("EARLIEST", "latest")).split).toMatchObject({ from: 0, to: 3_000 });
    expect(() => plan(logs("0x0", "Latest"), 200_000)).toThrow("block range");
    expect(need(call("eth_getBalance", [ADDRESS, "PENDING"]), "eth")).toMatchObject({ atHead: true });
    expect(need(call("eth_getBalance", [ADDRESS, "Earliest"]), "eth")).toMatchObject({ stateBlock: 0 });
    expect(plan(logs("0x0", "FINALIZED")).highestBlock).toBe(3_000);
  });

  it("a refusal limit below the registry's split limit refuses what it would have let through", () => {
    expect(plan(logs("0x0", "0x5dc")).split).toBeUndefined();
    expect(() => plan(logs("0x0", "0x5dc"), 3_000, { eth_getLogs: { refuseAbove: 1_000 } })).toThrow(
      "block range",
    );
  });
});

describe("a numbered end above the served head (the node caps it at its own head)", () => {
  const logs = (fromBlock: string, toBlock: string) => call("eth_getLogs", [{ fromBlock, toBlock }]);
  const plan = (body: unknown, head = 871, single = true) =>
    planRanges(need(single ? body : [body], "eth") as ReadNeed, head, {
      eth_getLogs: { splitAbove: 100, refuseAbove: 1_000 },
    } as never);

  it("is never waited for: the read needs the head, or its start when that is above the head", () => {
    expect(plan(logs("0x307", "0x3d1")).highestBlock).toBe(871);
    expect(plan(logs("0x367", "0x370")).highestBlock).toBe(871);
    expect(plan(logs("0x380", "0x390")).highestBlock).toBe(0x380);
  });

  it("is split up to the head, the rest as written; within the split limit up to the head it goes as sent", () => {
    expect(plan(logs("0x307", "0x3d1")).split).toBeUndefined();
    expect(plan(logs("0x307", "0x3d1"), 871, false).split).toBeUndefined();
    expect(plan(logs("0x64", "0x3d1")).split).toMatchObject({
      from: 100,
      to: 870,
      tail: { from: 871, to: "0x3d1" },
    });
    // refused as wide as written
    expect(() => plan(logs("0x0", "0x3e8"))).toThrow("block range");
  });
});

describe("a filter's range (eth_newFilter): scanned up to the head, watched past it", () => {
  const filter = (range: Record<string, string>) => call("eth_newFilter", [range]);
  const plan = (body: unknown, head: number, limits?: Record<string, { refuseAbove?: number }>) =>
    planRanges(need(body, "eth") as ReadNeed, head, limits as never);

  it("from genesis to far past the head: counted to the head, never split, never waited for", () => {
    expect(plan(filter({ fromBlock: "0x0", toBlock: "0xffffff" }), 3_000)).toEqual({
      highestBlock: -1,
      split: undefined,
    });
    expect(() => plan(filter({ fromBlock: "0x0", toBlock: "0xffffff" }), 200_000)).toThrow("block range");
    expect(() => plan(filter({ fromBlock: "earliest" }), 200_000)).toThrow("block range");
    expect(() =>
      plan(filter({ fromBlock: "0x0", toBlock: "latest" }), 3_000, { eth_newFilter: { refuseAbove: 1_000 } }),
    ).toThrow("block range");
  });

  it("blocks still to come only: nothing to scan", () => {
    expect(plan(filter({ fromBlock: "0x1000", toBlock: "0xffffff" }), 3_000)).toEqual({
      highestBlock: -1,
      split: undefined,
    });
    expect(plan(filter({}), 3_000).split).toBeUndefined();
  });
});

describe("ranges that page themselves: refused when too wide, never split", () => {
  const plan = (body: unknown, label: string, head = 1_000_000) =>
    planRanges(need(body, label) as ReadNeed, head, undefined);

  it("Stellar getEvents: startLedger to the head, its params object the range", () => {
    expect(
      plan(call("getEvents", { startLedger: 999_000, pagination: { limit: 10 } } as never), "xlm"),
    ).toEqual({
      highestBlock: 1_000_000,
      split: undefined,
    });
    expect(() =>
      plan(call("getEvents", { startLedger: 100, pagination: { limit: 10 } } as never), "xlm"),
    ).toThrow("block range");
  });

  it("Starknet getEvents: a block_number range with a chunk_size", () => {
    const filter = (from: number, to: number) => ({
      from_block: { block_number: from },
      to_block: { block_number: to },
      chunk_size: 100,
    });
    expect(plan(call("starknet_getEvents", [filter(1, 50_000)]), "starknet").split).toBeUndefined();
    expect(() => plan(call("starknet_getEvents", [filter(1, 500_000)]), "starknet")).toThrow("block range");
    // by name, as starknet.js sends it: the same range, the same refusal
    const byName = call("starknet_getEvents", { filter: filter(1, 500_000) } as never);
    expect(() => plan(byName, "starknet")).toThrow("block range");
  });

  it("Starknet getEvents without from_block scans from genesis (Pathfinder), so it is as wide as the chain", () => {
    const open = (filter: object) => call("starknet_getEvents", [{ chunk_size: 100, ...filter }]);
    expect(() => plan(open({ to_block: "latest" }), "starknet")).toThrow("block range");
    expect(() => plan(open({}), "starknet")).toThrow("block range");
    expect(() => plan(open({ from_block: null }), "starknet")).toThrow("block range");
    expect(() => plan(open({ to_block: { block_number: 200_000 } }), "starknet")).toThrow("block range");
    // a young chain's whole history is a range like any other
    expect(plan(open({ to_block: { block_number: 5_000 } }), "starknet").highestBlock).toBe(5_000);
    // eth_getLogs without fromBlock reads from the head, as geth does: one block
    const logs = call("eth_getLogs", [{ toBlock: "latest" }]);
    expect(plan(logs, "eth")).toEqual({ highestBlock: 1_000_000, split: undefined });
  });

  it("toncenter: a seqno names a masterchain block for the block calls only with workchain -1; Ogmios reads at the tip", () => {
    const shard = "-9223372036854775808";
    const header = (workchain: number) =>
      need(
        { jsonrpc: "2.0", id: 1, method: "getBlockHeader", params: { workchain, shard, seqno: 50 } },
        "ton",
      );
    expect(header(-1)?.highestBlock).toBe(50);
    // a shard block's seqno is not the masterchain's, which the head counts: routed by none, its state is a
    // full node's to say it has; and one made a moment ago a node behind has not made (archive-slice.cpp's
    // "ltdb: block not found"): it needs the served head
    const unnamed = { highestBlock: -1, atHead: true, stateBlock: -1, stateUnnamed: true };
    expect(header(0)).toMatchObject(unnamed);
    expect(
      need({ jsonrpc: "2.0", id: 1, method: "getShards", params: { seqno: 60 } }, "ton")?.highestBlock,
    ).toBe(60);
    expect(
      need({ jsonrpc: "2.0", id: 1, method: "queryLedgerState/protocolParameters" }, "ada")?.atHead,
    ).toBe(true);
    // numbers as their decimal text, as a GET's query sends them and ton-http-api coerces them
    const texts = (workchain: string, seqno: string) =>
      need({ jsonrpc: "2.0", id: 1, method: "getBlockHeader", params: { workchain, shard, seqno } }, "ton");
    expect(texts("-1", "50")?.highestBlock).toBe(50);
    expect(texts("0", "50")).toMatchObject(unnamed);
    expect(
      need({ jsonrpc: "2.0", id: 1, method: "shards", params: { seqno: "61" } }, "ton")?.highestBlock,
    ).toBe(61);
  });

  it("Bitcoin Core's block filter and chain statistics name a block by hash, by position and by name", () => {
    const hash = "a".repeat(64);
    expect(need(call("getblockfilter", [hash, "basic"]), "btc")).toMatchObject({ byHash: true });
    expect(need(call("getblockfilter", { blockhash: hash } as never), "btc")).toMatchObject({ byHash: true });
    expect(need(call("getchaintxstats", [10, hash]), "btc")).toMatchObject({ byHash: true });
    // with no block named, the statistics are the tip's
    expect(need(call("getchaintxstats", [10]), "btc")).toMatchObject({ atHead: true });
  });

  it("Stellar getLedgers names its first ledger, and reads on to the node's latest: at the head too", () => {
    expect(need(call("getLedgers", { startLedger: 42 } as never), "xlm")).toMatchObject({
      highestBlock: 42,
      atHead: true,
      learn: [{ path: ["result", "latestLedger"], isHead: false }],
    });
  });
});

describe("restReadNeed", () => {
  const need = (label: string, path: string) => {
    const mount = endpointsByLabel.get(label)?.mounts[0] as Mount;
    const segments = path.split("/").filter((s) => s !== "");
    const match = matchRoute(mount.policy.routes as RouteNode, "GET", segments);
    if (match.kind !== "match") throw new Error(`${path} matches no route`);
    return restReadNeed(mount.policy.restReads as RestReadRules, match.shape, segments);
  };

  it("a block in the path: the head, a block counted back from it, a number, a hash", () => {
    expect(need("xtz", "/chains/main/blocks/head/context/constants")).toMatchObject({ atHead: true });
    expect(need("xtz", "/chains/main/blocks/head~2/header")).toMatchObject({ atHead: true });
    expect(need("xtz", "/chains/main/blocks/5000000/header")).toMatchObject({
      atHead: false,
      highestBlock: 5_000_000,
    });
    // a hash: no head to reach, but a node that has not seen the block answers 404, and another is asked
    expect(need("xtz", `/chains/main/blocks/B${"a".repeat(50)}/header`)).toMatchObject({
      atHead: false,
      highestBlock: -1,
      byHash: true,
      unknownAnswers: [{ status: 404 }],
    });
    expect(need("vet", "/blocks/finalized")).toMatchObject({ atHead: true });
    expect(need("vet", "/blocks/123")).toMatchObject({ highestBlock: 123 });
    expect(need("algo", "/v2/blocks/42")).toMatchObject({ highestBlock: 42 });
    // a round's ledger state delta (algosdk's getLedgerStateDelta), its groups' too; a group by id names no
    // round, and a node that has not evaluated its round answers 404: read at the head
    expect(need("algo", "/v2/deltas/42")).toMatchObject({ highestBlock: 42 });
    expect(need("algo", "/v2/deltas/42/txn/group")).toMatchObject({ highestBlock: 42 });
    expect(need("algo", "/v2/deltas/txn/group/ABC")).toMatchObject({ atHead: true, highestBlock: -1 });
    // an account is read at the node's head (reads.atHeadPaths); a path no rule names needs nothing
    expect(need("algo", "/v2/accounts/ABC")).toMatchObject({ atHead: true, highestBlock: -1 });
    expect(need("algo", "/v2/transactions/pending")).toBeUndefined();
  });

  it("a block read whose answer shows its height teaches it at the head, and still names a block by level", () => {
    // Octez's block answer holds its header: a read of the head block raises the served head to its level
    const header = { id: undefined, path: ["header", "level"], isHead: false, isFinal: false };
    expect(need("xtz", "/chains/main/blocks/head")).toMatchObject({ atHead: true, learn: [header] });
    // a level in the path is a block the node must have reached, not a read at the head
    expect(need("xtz", "/chains/main/blocks/5000000")).toMatchObject({
      atHead: false,
      highestBlock: 5_000_000,
      learn: [],
    });
    expect(need("algo", "/v2/transactions/params")).toMatchObject({
      atHead: true,
      learn: [{ path: ["last-round"], isHead: false }],
    });
  });
});
