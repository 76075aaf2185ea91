import { request } from "undici";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { answeredSince, type RecordingNode, startRecordingNode } from "../support/recording-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// The answer cache on a real anvil (docs/cache.md), behind a node that records every call it forwards.
// anvil names `finalized` the block 64 below its head (two epochs of 32 slots), as a beacon chain would.

const ETH_MAINNET = 1;
const FINALITY_DEPTH = 64;
/** The prober's finality and head block calls (registry `reads.cache`). */
const FINALIZED = ["finalized", false];
const LATEST = ["latest", false];
/** anvil's first and second dev accounts. */
const DEV = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const OTHER = "0x70997970c51812dc3a010c7d01b0e0aec37d6c8f";

describe("the answer cache on a real anvil", () => {
  let node: Anvil;
  let recorder: RecordingNode;
  let gw: RunningGateway;
  let restore: () => void;

  /** A call through the gateway: its id, result or error, and the cache header. */
  async function call(method: string, params: unknown[], id: unknown = 1, key: string = KEYS.all) {
    const answer = await gw.call("eth", `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
    const body = answer.json as { id: unknown; result?: unknown; error?: { message: string } };
    return { ...body, cache: answer.headers["x-cache"], text: answer.text };
  }

  /** The head the gateway serves on eth, and the finalized height it read from its probes. */
  const group = () => gw.gateway.upstreams.group("eth", "/");
  const servedHeight = () => group()?.served.height ?? -1;
  const finalizedHeight = () => group()?.finalized ?? -1;

  /** How many calls of `method` (with these params, when given) reached the node. */
  function reached(method: string, params?: unknown[]): number {
    return recorder.calls.filter(
      (c) =>
        c.method === method && (params === undefined || JSON.stringify(c.params) === JSON.stringify(params)),
    ).length;
  }

  /** A signed transfer of `value` wei from the first dev account to the second, at its next nonce. */
  async function transfer(value: bigint): Promise<`0x${string}`> {
    const nonce = await node.rpc<string>("eth_getTransactionCount", [DEV, "latest"]);
    return privateKeyToAccount(DEV_KEY).signTransaction({
      chainId: ETH_MAINNET,
      nonce: Number(nonce),
      to: OTHER,
      value,
      gas: 21_000n,
      gasPrice: 10n ** 10n,
    });
  }

  /** Waits until the node has mined the transaction `hash`, asking the node itself. */
  async function untilMined(hash: string): Promise<void> {
    await eventually(
      async () => (await node.rpc("eth_getTransactionReceipt", [hash])) !== null,
      5_000,
      "the transaction mined",
    );
  }

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startAnvil({ chainId: ETH_MAINNET });
    await node.rpc("anvil_mine", ["0x50"]); // 80 blocks: blocks up to 16 are final
    recorder = await startRecordingNode(node.url);
    gw = await startGateway({
      // calls over HTTP are recorded; the WebSocket goes to anvil itself
      upstreams: { eth: [{ url: recorder.url, ws: node.url.replace("http:", "ws:"), name: "a" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 5_000 },
    });
    // the prober has read the node's finalized block
    await eventually(() => answeredSince(recorder, 0, FINALIZED), 5_000, "a finality probe answered");
  });
  afterAll(async () => {
    await gw?.close();
    await recorder?.close();
    await node?.stop();
    restore?.();
  });

  it("a final block is read from the node once, and each caller gets it with its own id", async () => {
    const ids = [7, "seven", 70_000_000_000_000_000_001n.toString(), null];
    const answers = [];
    for (const id of ids) answers.push(await call("eth_getBlockByNumber", ["0x2", false], id));
    expect(answers.map((a) => a.cache)).toEqual(["miss", "hit", "hit", "hit"]);
    expect(answers.map((a) => a.id)).toEqual(ids);
    expect(new Set(answers.map((a) => JSON.stringify(a.result))).size).toBe(1);
    expect(answers[0]?.result).toMatchObject({ number: "0x2" });
    expect(reached("eth_getBlockByNumber", ["0x2", false])).toBe(1);
    // the same call written another way is the same call: hex in capitals
    const before = reached("eth_getBalance");
    await call("eth_getBalance", [DEV, "0x3"]);
    const again = await call("eth_getBalance", [DEV.toUpperCase().replace("0X", "0x"), "0x3"]);
    expect(again.cache).toBe("hit");
    expect(reached("eth_getBalance")).toBe(before + 1);
    // but not with geth's other prefix, 0X, which anvil (alloy) refuses for an address: the node's answer
    const prefixed = await call("eth_getBalance", [DEV.toUpperCase(), "0x3"]);
    expect(prefixed.cache).not.toBe("hit");
    expect(prefixed.error?.message).toBe("invalid string length");
    expect(reached("eth_getBalance")).toBe(before + 2);
  });

  it("a batch is answered call by call: cached calls from the cache, the rest in one batch to the node", async () => {
    const batch = async (ids: readonly number[]) => {
      const calls = [
        { jsonrpc: "2.0", id: ids[0], method: "eth_getBlockByNumber", params: ["0x2", false] },
        { jsonrpc: "2.0", id: ids[1], method: "eth_getBlockByNumber", params: ["0x4", false] },
        { jsonrpc: "2.0", id: ids[2], method: "eth_gasPrice", params: [] },
      ];
      const answer = await gw.call("eth", `/${KEYS.all}`, { body: JSON.stringify(calls) });
      return { answers: answer.json as { id: number; result: unknown }[], cache: answer.headers["x-cache"] };
    };
    const before = recorder.calls.length;
    const first = await batch([11, 12, 13]);
    expect(first.answers.map((a) => a.id)).toEqual([11, 12, 13]);
    expect(first.answers[0]?.result).toMatchObject({ number: "0x2" });
    expect(first.answers[1]?.result).toMatchObject({ number: "0x4" });
    expect(first.cache).toBe("miss");
    // block 2 was kept by the test before: only block 4 and the gas price went to the node
    const sent = recorder.calls
      .slice(before)
      .filter((c) => c.method !== "eth_blockNumber" && c.params !== undefined);
    expect(sent.filter((c) => JSON.stringify(c.params) === '["0x2",false]')).toEqual([]);
    expect(sent.filter((c) => JSON.stringify(c.params) === '["0x4",false]')).toHaveLength(1);
    const second = await batch([21, 22, 23]);
    expect(second.answers.map((a) => a.id)).toEqual([21, 22, 23]);
    expect(second.answers[1]?.result).toEqual(first.answers[1]?.result);
    expect(reached("eth_getBlockByNumber", ["0x4", false])).toBe(1);
    expect(reached("eth_gasPrice")).toBeGreaterThanOrEqual(2);
    // every call held: nothing reaches the node
    const held = [
      { jsonrpc: "2.0", id: "a", method: "eth_getBlockByNumber", params: ["0x2", false] },
      { jsonrpc: "2.0", id: "b", method: "eth_getBlockByNumber", params: ["0x4", false] },
    ];
    const calls = recorder.calls.length;
    const all = await gw.call("eth", `/${KEYS.all}`, { body: JSON.stringify(held) });
    expect(all.headers["x-cache"]).toBe("hit");
    expect((all.json as { id: string }[]).map((a) => a.id)).toEqual(["a", "b"]);
    expect(
      recorder.calls
        .slice(calls)
        .filter(
          (c) =>
            c.method === "eth_getBlockByNumber" &&
            JSON.stringify(c.params) !== '["latest",false]' &&
            JSON.stringify(c.params) !== '["finalized",false]',
        ),
    ).toEqual([]);
  });

  it("a batch with a call the gateway refuses is still answered call by call from the cache", async () => {
    // blocks 2 and 4 kept, once read; admin_peers is no method the gateway relays
    for (const block of ["0x2", "0x4"]) await call("eth_getBlockByNumber", [block, false]);
    const calls = [
      { jsonrpc: "2.0", id: "x", method: "eth_getBlockByNumber", params: ["0x2", false] },
      { jsonrpc: "2.0", id: "y", method: "admin_peers", params: [] },
      { jsonrpc: "2.0", id: "z", method: "eth_getBlockByNumber", params: ["0x4", false] },
    ];
    const before = recorder.calls.length;
    const held = await gw.call("eth", `/${KEYS.all}`, { body: JSON.stringify(calls) });
    expect(held.headers["x-cache"]).toBe("hit");
    const answers = held.json as { id: string; result?: { number: string }; error?: { code: number } }[];
    expect(answers.map((a) => a.id).sort()).toEqual(["x", "y", "z"]);
    expect(answers.find((a) => a.id === "x")?.result?.number).toBe("0x2");
    expect(answers.find((a) => a.id === "z")?.result?.number).toBe("0x4");
    expect(answers.find((a) => a.id === "y")?.error?.code).toBe(-32601);
    const sent = () =>
      recorder.calls
        .slice(before)
        .filter((c) => c.method !== "eth_blockNumber" && !JSON.stringify(c.params).includes("latest"))
        .filter((c) => !JSON.stringify(c.params).includes("finalized"));
    expect(sent()).toEqual([]);
    // one call not held: it alone goes to the node, and the refusal still ends the array
    const mixed = [
      ...calls,
      { jsonrpc: "2.0", id: "w", method: "eth_getBlockByNumber", params: ["0x6", false] },
    ];
    const partly = await gw.call("eth", `/${KEYS.all}`, { body: JSON.stringify(mixed) });
    expect(partly.headers["x-cache"]).toBe("miss");
    const got = partly.json as { id: string; result?: { number: string } }[];
    expect(got.map((a) => a.id).sort()).toEqual(["w", "x", "y", "z"]);
    expect(got.find((a) => a.id === "w")?.result?.number).toBe("0x6");
    expect(sent().map((c) => JSON.stringify(c.params))).toEqual(['["0x6",false]']);
  });

  it("a batch whose ids are one value written two ways keeps nothing another caller could be given", async () => {
    // "a" and "\u0061", 0 and -0: different text, one id in the node's answers, which cannot be told apart
    for (const [first, second, one, other] of [
      ['"a"', '"\\u0061"', "0xc", "0xb"],
      ["0", "-0", "0xe", "0xd"],
    ]) {
      const body = `[{"jsonrpc":"2.0","id":${first},"method":"eth_getBlockByNumber","params":["${one}",false]},{"jsonrpc":"2.0","id":${second},"method":"eth_getBlockByNumber","params":["${other}",false]}]`;
      await gw.call("eth", `/${KEYS.all}`, { body });
      // another key's reads of either block: each its own block, whether from the node or the cache
      for (const number of [one, other]) {
        const got = (await call("eth_getBlockByNumber", [number, false], 1, KEYS.noArchive)).result as {
          number: string;
        };
        expect(got.number).toBe(number);
      }
    }
  });

  it("eth_chainId is asked once, whatever the ids", async () => {
    const first = await call("eth_chainId", [], 1);
    const second = await call("eth_chainId", [], 2);
    expect(first.result).toBe("0x1");
    expect([first.cache, second.cache]).toEqual(expect.arrayContaining(["hit"]));
    expect(second).toMatchObject({ id: 2, result: "0x1", cache: "hit" });
  });

  it("an answer at the head changes when a block is mined", async () => {
    const first = (await call("eth_blockNumber", [])).result as string;
    const balance = (await call("eth_getBalance", [OTHER, "latest"])).result as string;
    expect((await call("eth_blockNumber", [])).cache).toBe("hit");
    expect((await call("eth_getBalance", [OTHER, "latest"])).cache).toBe("hit");
    await node.rpc("anvil_setBalance", [OTHER, "0x1234"]);
    await node.rpc("evm_mine", []);
    await eventually(
      async () => (await call("eth_blockNumber", [])).result === `0x${(Number(first) + 1).toString(16)}`,
      3_000,
      "the new head through the cache",
    );
    const after = await call("eth_getBalance", [OTHER, "latest"]);
    expect(after.result).toBe("0x1234");
    expect(after.result).not.toBe(balance);
  });

  it("a caller reads its own write: a transaction sent through the gateway ends the answers read at the head", async () => {
    const before = (await call("eth_getBalance", [OTHER, "latest"])).result as string;
    expect((await call("eth_getBalance", [OTHER, "latest"])).cache).toBe("hit");
    const raw = await transfer(1n);
    const sent = await call("eth_sendRawTransaction", [raw]);
    expect(sent.error).toBeUndefined();
    // anvil mines a transaction as it takes it, but a loaded machine may answer the hash first
    await untilMined(sent.result as string);
    // the next read is the node's, not the answer from before the write
    const after = await call("eth_getBalance", [OTHER, "latest"]);
    expect(after.cache).not.toBe("hit");
    expect(BigInt(after.result as string)).toBe(BigInt(before) + 1n);
  });

  it("so does a transaction sent over the gateway's WebSocket", async () => {
    // read twice while the head stays (the test before mined a block the served head may still be reaching),
    // with a key that has not written
    const key = KEYS.ethOnly;
    let before = "";
    await eventually(
      async () => {
        before = (await call("eth_getBalance", [OTHER, "latest"], 1, key)).result as string;
        return (await call("eth_getBalance", [OTHER, "latest"], 1, key)).cache === "hit";
      },
      5_000,
      "a second read answered from the cache while the head stays",
    );
    const raw = await transfer(2n);
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${key}`);
    try {
      const sent = await socket.call("eth_sendRawTransaction", [raw]);
      expect(sent.error).toBeUndefined();
      // anvil mines a transaction as it takes it, but a loaded machine may answer the hash first
      await eventually(
        async () => (await socket.call("eth_getTransactionReceipt", [sent.result])).result !== null,
        5_000,
        "the transaction mined",
      );
    } finally {
      socket.close();
    }
    const after = await call("eth_getBalance", [OTHER, "latest"], 1, key);
    expect(after.cache).not.toBe("hit");
    expect(BigInt(after.result as string)).toBe(BigInt(before) + 2n);
  });

  it("a write the node refused ends nothing: what was read at the head stands, over HTTP and WebSocket, alone or in a batch", async () => {
    // a key that never wrote: its reads at the head are not its own write's to follow
    const read = () => call("eth_getBalance", [OTHER, "latest"], 1, KEYS.noArchive);
    const refusedWrite = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "eth_sendRawTransaction",
      params: ["0x00"],
    });
    const batch = async (second: Record<string, unknown>) => {
      const r = await gw.call("eth", `/${KEYS.noArchive}`, {
        body: JSON.stringify([refusedWrite(1), second]),
      });
      return r.json as { id: number; error?: unknown }[];
    };
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    try {
      await eventually(
        async () => {
          await read();
          // anvil cannot decode it: nothing reached a mempool, nothing changed
          const overHttp = await call("eth_sendRawTransaction", ["0x00"], 9, KEYS.noArchive);
          const overSocket = await socket.call("eth_sendRawTransaction", ["0x00"]);
          // beside a call the node answers, and beside one the gateway refuses
          // alone in a batch with an id anvil cannot read: anvil refuses the batch whole, with "id": null
          const oddId = await gw.call("eth", `/${KEYS.noArchive}`, {
            body: JSON.stringify([{ ...refusedWrite(1), id: 1.5 }]),
          });
          expect((oddId.json as { id: unknown; error?: unknown }).error).toBeDefined();
          const besideRead = await batch({ jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] });
          const besideRefusal = await batch({ jsonrpc: "2.0", id: 2, method: "admin_peers", params: [] });
          const writes = [besideRead, besideRefusal].map((answers) => answers.find((a) => a.id === 1));
          expect(
            [overHttp.error, overSocket.error, ...writes.map((w) => w?.error)].every((e) => e !== undefined),
          ).toBe(true);
          return (await read()).cache === "hit";
        },
        5_000,
        "a read at the head answered from the cache after refused writes",
      );
    } finally {
      socket.close();
    }
  });

  it("for a while after its write, a writer's reads at the head go to the node; other callers' meet the cache as before", async () => {
    const read = (key: string) => call("eth_getBalance", [OTHER, "latest"], 1, key);
    await node.rpc("evm_setAutomine", [false]);
    try {
      const sent = await call("eth_sendRawTransaction", [await transfer(3n)]);
      expect(sent.error).toBeUndefined();
      // the write waits in the node's pool: what the node answers at the head does not show it yet
      const [first, second] = [await read(KEYS.all), await read(KEYS.all)];
      expect([first.cache, second.cache]).toEqual([undefined, undefined]);
      expect(second.result).toBe(first.result);
      // another caller's reads meet the cache as before: kept, or answered from it
      expect(["miss", "hit"]).toContain((await read(KEYS.noArchive)).cache);
      await node.rpc("evm_mine", []);
      await untilMined(sent.result as string);
      // the writer's next read is the node's, whatever the head the gateway has seen
      expect(BigInt((await read(KEYS.all)).result as string)).toBe(BigInt(first.result as string) + 3n);
    } finally {
      await node.rpc("evm_setAutomine", [true]);
    }
  });

  it("a transaction still in the mempool (blockNumber null) is not kept: once mined, its block shows", async () => {
    await node.rpc("evm_setAutomine", [false]);
    try {
      // sent to the node itself, so that no write through the gateway moves what it keeps
      const hash = await node.rpc<string>("eth_sendRawTransaction", [await transfer(4n)]);
      const pending = [
        await call("eth_getTransactionByHash", [hash]),
        await call("eth_getTransactionByHash", [hash]),
      ];
      expect(pending.map((p) => (p.result as { blockNumber: unknown }).blockNumber)).toEqual([null, null]);
      expect(pending[1]?.cache).toBe("miss");
      await node.rpc("evm_mine", []);
      const mined = await call("eth_getTransactionByHash", [hash]);
      expect((mined.result as { blockNumber: unknown }).blockNumber).toMatch(/^0x[0-9a-f]+$/);
    } finally {
      await node.rpc("evm_setAutomine", [true]);
    }
  });

  // in any case: anvil and Reth read `PENDING` as `pending`, as the gateway reads every tag (block-params.ts)
  it("a read at pending is never kept, as a tag or in an EIP-1898 object, in any case: the mempool moves without a block", async () => {
    await node.rpc("evm_setAutomine", [false]);
    try {
      const nonces = async () =>
        Promise.all(
          ["pending", { blockNumber: "pending" }, "PENDING", { blockNumber: "Pending" }].map(async (at) => {
            const read = await call("eth_getTransactionCount", [DEV, at]);
            expect(read.cache).toBeUndefined();
            return read.result;
          }),
        );
      const before = await nonces();
      expect(await nonces()).toEqual(before);
      // sent to the node itself, so that no write through the gateway moves what it keeps
      await node.rpc("eth_sendRawTransaction", [await transfer(5n)]);
      const after = await nonces();
      expect(after.map((n) => BigInt(n as string))).toEqual(before.map((n) => BigInt(n as string) + 1n));
      await node.rpc("evm_mine", []);
    } finally {
      await node.rpc("evm_setAutomine", [true]);
    }
  });

  // geth since history expiry answers `earliest` with the first block it keeps (eth/api_backend.go
  // HeaderByNumber: GetHeaderByNumber(b.HistoryPruningCutoff())), block 0 only on a node that keeps all
  // history: which block it names depends on the node, and none of its answers may be kept as block 0's
  it("a read at earliest is never kept: a pruned node names its history cutoff by it", async () => {
    const before = reached("eth_getBlockByNumber", ["earliest", false]);
    for (let i = 0; i < 2; i++) {
      const read = await call("eth_getBlockByNumber", ["earliest", false]);
      expect(read.cache).toBeUndefined();
      expect((read.result as { number: string }).number).toBe("0x0");
    }
    expect(reached("eth_getBlockByNumber", ["earliest", false]) - before).toBe(2);
  });

  it("a block above the finalized height is kept only while the head stays", async () => {
    const head = Number((await node.rpc<string>("eth_blockNumber", [])) as string);
    // the head the gateway serves has caught up with the blocks the tests before mined: it stays now
    await eventually(() => servedHeight() === head, 3_000, "the served head at the node's");
    const recent = `0x${(head - 1).toString(16)}`;
    expect(head - 1).toBeGreaterThan(head - FINALITY_DEPTH);
    // read twice while the head stays: a loaded machine's prober may move the head epoch between two calls
    // (a probe that times out and comes back), and then the pair is read again
    await eventually(
      async () => {
        await call("eth_getBlockByNumber", [recent, false]);
        return (await call("eth_getBlockByNumber", [recent, false])).cache === "hit";
      },
      5_000,
      "a second read answered from the cache while the head stays",
    );
    await node.rpc("evm_mine", []);
    await eventually(
      async () => (await call("eth_getBlockByNumber", [recent, false])).cache === "miss",
      3_000,
      "the entry gone with the head's move",
    );
  });

  it("100 identical calls in flight at once reach a slow node once; a caller hanging up does not cancel the others", async () => {
    recorder.delayMs = 1_500;
    try {
      const params = [DEV, "0x5"];
      const before = reached("eth_getTransactionCount", params);
      // the first caller leaves before the node answers
      const leaving = new AbortController();
      const first = request(`${gw.origin}/${KEYS.all}`, {
        method: "POST",
        headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "eth_getTransactionCount", params }),
        signal: leaving.signal,
      }).catch(() => undefined);
      // the node holds the call 1.5 s: the others arrive while it is in flight
      await eventually(
        () => reached("eth_getTransactionCount", params) > before,
        2_000,
        "the call at the node",
      );
      const coalesced = () =>
        gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "coalesced" });
      const waiting = await coalesced();
      const rest = Array.from({ length: 99 }, (_, i) => call("eth_getTransactionCount", params, i + 1));
      // every one of them is waiting on the first caller's call before that caller leaves
      await eventually(async () => (await coalesced()) >= waiting + 99, 1_000, "99 callers coalesced");
      leaving.abort();
      await first;
      const answers = await Promise.all(rest);
      expect(answers.every((a) => a.result === "0x0")).toBe(true);
      expect(answers.map((a) => a.id)).toEqual(Array.from({ length: 99 }, (_, i) => i + 1));
      expect(answers.every((a) => a.cache === "coalesced")).toBe(true);
      expect(reached("eth_getTransactionCount", params)).toBe(before + 1);
      expect(
        await gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "coalesced" }),
      ).toBeGreaterThanOrEqual(99);
    } finally {
      recorder.delayMs = 0;
    }
  });

  it("identical calls in a batch reach the node once; a batch waits on an identical call in flight, and a call on a batch's", async () => {
    // blocks by number, final
    const count = (block: string) => ({ method: "eth_getBlockByNumber", params: [block, false] });
    const batchOf = (calls: { id: string; method: string; params: unknown[] }[]) =>
      gw.call("eth", `/${KEYS.all}`, { body: JSON.stringify(calls.map((c) => ({ jsonrpc: "2.0", ...c }))) });
    const numbers = (answer: { json: unknown }) =>
      (answer.json as { id: string; result: { number: string } }[]).map((a) => [a.id, a.result.number]);
    // the same call twice in one batch, each with its id: asked once
    const before = reached("eth_getBlockByNumber", count("0xa").params);
    const twice = await batchOf([
      { id: "a", ...count("0xa") },
      { id: "b", ...count("0xa") },
    ]);
    expect(numbers(twice)).toEqual([
      ["a", "0xa"],
      ["b", "0xa"],
    ]);
    expect(reached("eth_getBlockByNumber", count("0xa").params)).toBe(before + 1);
    recorder.delayMs = 800;
    try {
      // a batch while a single call for the same read is at the node: it waits for that call's answer
      const held = count("0x8");
      const heldBefore = reached("eth_getBlockByNumber", held.params);
      const single = call("eth_getBlockByNumber", held.params, 1);
      await eventually(() => reached("eth_getBlockByNumber", held.params) > heldBefore, 2_000, "at the node");
      const waiting = await batchOf([
        { id: "x", ...held },
        { id: "y", ...held },
      ]);
      expect(numbers(waiting)).toEqual([
        ["x", "0x8"],
        ["y", "0x8"],
      ]);
      expect(waiting.headers["x-cache"]).toBe("coalesced");
      expect((await single).result).toMatchObject({ number: "0x8" });
      expect(reached("eth_getBlockByNumber", held.params)).toBe(heldBefore + 1);
      // a single call while a batch's identical call is at the node waits for it too
      const batched = count("0x9");
      const batchedBefore = reached("eth_getBlockByNumber", batched.params);
      const batch = batchOf([{ id: "m", ...batched }]);
      await eventually(
        () => reached("eth_getBlockByNumber", batched.params) > batchedBefore,
        2_000,
        "the batch at the node",
      );
      const follower = await call("eth_getBlockByNumber", batched.params, 5);
      expect(follower).toMatchObject({ id: 5, result: { number: "0x9" }, cache: "coalesced" });
      expect(numbers(await batch)).toEqual([["m", "0x9"]]);
      expect(reached("eth_getBlockByNumber", batched.params)).toBe(batchedBefore + 1);
    } finally {
      recorder.delayMs = 0;
    }
  });

  it("a client hanging up cancels nothing for the batches and calls waiting on its node call", async () => {
    const block = (n: string) => ({ method: "eth_getBlockByNumber", params: [n, false] });
    const batchOf = (ids: string[], n: string) =>
      gw.call("eth", `/${KEYS.all}`, {
        body: JSON.stringify(ids.map((id) => ({ jsonrpc: "2.0", id, ...block(n) }))),
      });
    /** A request whose client leaves when `signal` aborts. */
    const leavingWith = (body: unknown, signal: AbortSignal) =>
      request(`${gw.origin}/${KEYS.all}`, {
        method: "POST",
        headers: { host: `eth.${DOMAIN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal,
      }).catch(() => undefined);
    const waitingCalls = () => gw.metric("gateway_cache_waiting", { label: "eth" });
    const numbers = (answer: { json: unknown }) =>
      (answer.json as { id: string; result: { number: string } }[]).map((a) => [a.id, a.result.number]);
    recorder.delayMs = 800;
    try {
      // a single call leads, a batch waits on it, and the single call's client leaves
      const led = block("0x11");
      const ledBefore = reached("eth_getBlockByNumber", led.params);
      const leaving = new AbortController();
      const single = leavingWith({ jsonrpc: "2.0", id: 1, ...led }, leaving.signal);
      await eventually(() => reached("eth_getBlockByNumber", led.params) > ledBefore, 2_000, "at the node");
      const waiting = batchOf(["p"], "0x11");
      await eventually(async () => (await waitingCalls()) === 1, 2_000, "the batch waiting");
      leaving.abort();
      await single;
      const answered = await waiting;
      expect(numbers(answered)).toEqual([["p", "0x11"]]);
      expect(answered.headers["x-cache"]).toBe("coalesced");
      expect(reached("eth_getBlockByNumber", led.params)).toBe(ledBefore + 1);

      // a batch leads, a single call and another batch wait on it, and the first batch's client leaves
      const first = block("0x12");
      const firstBefore = reached("eth_getBlockByNumber", first.params);
      const gone = new AbortController();
      const leader = leavingWith([{ jsonrpc: "2.0", id: "a", ...first }], gone.signal);
      await eventually(
        () => reached("eth_getBlockByNumber", first.params) > firstBefore,
        2_000,
        "at the node",
      );
      const follower = call("eth_getBlockByNumber", first.params, 7);
      const other = batchOf(["q"], "0x12");
      await eventually(async () => (await waitingCalls()) === 2, 2_000, "two waiting");
      gone.abort();
      await leader;
      expect(await follower).toMatchObject({ id: 7, result: { number: "0x12" }, cache: "coalesced" });
      expect(numbers(await other)).toEqual([["q", "0x12"]]);
      expect(reached("eth_getBlockByNumber", first.params)).toBe(firstBefore + 1);
    } finally {
      recorder.delayMs = 0;
    }
  });

  it("a call whose id anvil refuses (1.5) leads no identical call: the others get the answer, not its id's error", async () => {
    recorder.delayMs = 500;
    try {
      const params = [OTHER, "0x6"];
      const before = reached("eth_getTransactionCount", params);
      const odd = call("eth_getTransactionCount", params, 1.5);
      await eventually(
        () => reached("eth_getTransactionCount", params) > before,
        2_000,
        "the call at the node",
      );
      const others = await Promise.all([
        call("eth_getTransactionCount", params, 2),
        call("eth_getTransactionCount", params, "x"),
      ]);
      // anvil reads ids as strings or u64: the odd one's answer is about its id
      expect((await odd).error?.message).toMatch(/invalid request/i);
      expect(others.map((a) => [a.id, a.result, a.error])).toEqual([
        [2, "0x0", undefined],
        ["x", "0x0", undefined],
      ]);
      // the two others went together, as one call of their own
      expect(reached("eth_getTransactionCount", params)).toBe(before + 2);
    } finally {
      recorder.delayMs = 0;
    }
  });

  it("a WebSocket call identical to an HTTP call in flight waits for that call's answer, with its own id", async () => {
    recorder.delayMs = 1_000;
    const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      // a block read, which no archive key's flight could answer from another tier
      const params = ["0x7", false];
      const before = reached("eth_getBlockByNumber", params);
      const overHttp = call("eth_getBlockByNumber", params, 1);
      await eventually(
        () => reached("eth_getBlockByNumber", params) > before,
        2_000,
        "the HTTP call at the node",
      );
      const coalesced = () =>
        gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "coalesced" });
      const sharedBefore = await coalesced();
      socket.ws.send(JSON.stringify({ jsonrpc: "2.0", id: "ws", method: "eth_getBlockByNumber", params }));
      // waiting on the HTTP call, not sent over the connection's own node socket
      await eventually(
        async () => (await gw.metric("gateway_cache_waiting", { label: "eth" })) === 1,
        900,
        "the WebSocket call waiting",
      );
      const answer = JSON.parse(await socket.waitFor((text) => text.includes('"id":"ws"')));
      const first = await overHttp;
      expect(first.cache).toBe("miss");
      expect(answer).toEqual({ jsonrpc: "2.0", id: "ws", result: first.result });
      expect(answer.result).toMatchObject({ number: "0x7" });
      expect(reached("eth_getBlockByNumber", params)).toBe(before + 1);
      expect(await coalesced()).toBe(sharedBefore + 1);
    } finally {
      recorder.delayMs = 0;
      socket.close();
    }
  });

  it("a final block read by its hash is kept past head moves: its answer's height is final", async () => {
    const { hash } = await node.rpc<{ hash: string }>("eth_getBlockByNumber", ["0x5", false]);
    const before = reached("eth_getBlockByHash");
    expect(((await call("eth_getBlockByHash", [hash, false])).result as { number: string }).number).toBe(
      "0x5",
    );
    await node.rpc("evm_mine", []);
    const head = await node.rpc<string>("eth_blockNumber", []);
    await eventually(async () => (await call("eth_blockNumber", [])).result === head, 3_000, "the head seen");
    expect((await call("eth_getBlockByHash", [hash, false], 2)).cache).toBe("hit");
    expect(reached("eth_getBlockByHash")).toBe(before + 1);
  });

  it("after a reorg no answer from the replaced blocks is served", async () => {
    const snapshot = await node.rpc<string>("evm_snapshot", []);
    await node.rpc("evm_mine", []);
    await node.rpc("evm_mine", []);
    const head = await node.rpc<string>("eth_blockNumber", []);
    await eventually(async () => (await call("eth_blockNumber", [])).result === head, 3_000, "the head seen");
    const replaced = (await call("eth_getBlockByNumber", [head, false])).result as { hash: string };
    // kept (once the probe has seen the head block: its first sight of a new head moves the epoch)
    await eventually(
      async () => (await call("eth_getBlockByNumber", [head, false])).cache === "hit",
      3_000,
      "the head block kept",
    );
    // read by its hash too, and at its hash as EIP-1898 lets a caller that must see one canonical block
    const atHash = [DEV, { blockHash: replaced.hash, requireCanonical: true }];
    expect(((await call("eth_getBlockByHash", [replaced.hash, false])).result as { hash: string }).hash).toBe(
      replaced.hash,
    );
    expect((await call("eth_getBlockByHash", [replaced.hash, false])).cache).toBe("hit");
    expect((await call("eth_getBalance", atHash)).result).toMatch(/^0x/);
    await eventually(async () => (await call("eth_getBalance", atHash)).cache === "hit", 3_000, "kept");
    // the two blocks are replaced by two others, with other timestamps: the head is where it was
    await node.rpc("evm_revert", [snapshot]);
    await node.rpc("evm_mine", [Math.floor(Date.now() / 1000) + 1000]);
    await node.rpc("evm_mine", [Math.floor(Date.now() / 1000) + 2000]);
    const mark = recorder.calls.length;
    const now = (await node.rpc<{ hash: string }>("eth_getBlockByNumber", [head, false])).hash;
    expect(now).not.toBe(replaced.hash);
    // the prober sees the new chain at its next probe (100 ms here); from then on, only the new block
    await eventually(() => answeredSince(recorder, mark, LATEST), 3_000, "the new head block probed");
    for (let i = 0; i < 20; i++) {
      const got = await call("eth_getBlockByNumber", [head, false]);
      const answer = got.result as { hash: string };
      expect(answer.hash).toBe(now);
    }
    // the replaced block by its hash is what the node says of it now: no block, no state at it
    expect((await call("eth_getBlockByHash", [replaced.hash, false])).result).toBe(
      await node.rpc("eth_getBlockByHash", [replaced.hash, false]),
    );
    const balance = await call("eth_getBalance", atHash);
    expect(balance.result).toBeUndefined();
    expect(balance.error).toBeDefined();
  });

  it("after evm_revert past the finalized height, no answer from the blocks it took away is served", async () => {
    const snapshot = await node.rpc<string>("evm_snapshot", []);
    const base = Number(await node.rpc<string>("eth_blockNumber", []));
    await node.rpc("anvil_mine", ["0x50", "0x1"]);
    // a block final once the 80 are mined: kept until evicted
    const block = `0x${(base + 5).toString(16)}`;
    await eventually(() => finalizedHeight() >= base + 5, 3_000, "the new finalized height read");
    const before = (await call("eth_getBlockByNumber", [block, false])).result as { hash: string };
    expect((await call("eth_getBlockByNumber", [block, false])).cache).toBe("hit");
    // the chain goes back under its finalized block, and 80 other blocks are mined, 2 s apart
    await node.rpc("evm_revert", [snapshot]);
    await eventually(() => finalizedHeight() < base + 5, 3_000, "the label's finality learned again");
    await node.rpc("anvil_mine", ["0x50", "0x2"]);
    const now = (await node.rpc<{ hash: string }>("eth_getBlockByNumber", [block, false])).hash;
    expect(now).not.toBe(before.hash);
    const head = await node.rpc<string>("eth_blockNumber", []);
    await eventually(async () => (await call("eth_blockNumber", [])).result === head, 3_000, "the head seen");
    expect(((await call("eth_getBlockByNumber", [block, false])).result as { hash: string }).hash).toBe(now);
  });

  it("after anvil_reorg deeper than finality, with the head where it was, no final answer from the replaced blocks is served", async () => {
    const head = Number(await node.rpc<string>("eth_blockNumber", []));
    // the probes have read the finalized block at this head, its hash too
    await eventually(() => finalizedHeight() === head - FINALITY_DEPTH, 3_000, "the finalized height read");
    const block = `0x${finalizedHeight().toString(16)}`;
    const before = (await call("eth_getBlockByNumber", [block, false])).result as { hash: string };
    expect((await call("eth_getBlockByNumber", [block, false])).cache).toBe("hit");
    // every block from the finalized one to the head is replaced: the chain is as high as it was
    await node.rpc("anvil_reorg", [head - finalizedHeight() + 1, []]);
    expect(Number(await node.rpc<string>("eth_blockNumber", []))).toBe(head);
    const now = (await node.rpc<{ hash: string }>("eth_getBlockByNumber", [block, false])).hash;
    expect(now).not.toBe(before.hash);
    // the next finality probe names the finalized height with another hash: what was kept goes
    await eventually(
      async () =>
        ((await call("eth_getBlockByNumber", [block, false])).result as { hash: string }).hash === now,
      3_000,
      "the new final block served",
    );
  });

  it("a revert at a final block is kept as the node's answer; other errors never are", async () => {
    // calling the zero address with a value it cannot take reverts nowhere; an invalid opcode from code we set does
    await node.rpc("anvil_setCode", [OTHER, "0x60006000fd"]); // PUSH1 0 PUSH1 0 REVERT
    const mark = recorder.calls.length;
    await node.rpc("anvil_mine", ["0x50"]);
    await eventually(() => answeredSince(recorder, mark, FINALIZED), 3_000, "the new finalized block probed");
    const head = Number(await node.rpc<string>("eth_blockNumber", []));
    // the probe's answer reached the node's recording before the gateway read it: wait for the gateway's
    await eventually(
      () => finalizedHeight() >= head - FINALITY_DEPTH - 1,
      3_000,
      "the finalized height read",
    );
    const final = `0x${(head - FINALITY_DEPTH - 1).toString(16)}`;
    const first = await call("eth_call", [{ to: OTHER, data: "0x" }, final]);
    expect(first.error?.message).toMatch(/execution reverted/);
    const second = await call("eth_call", [{ to: OTHER, data: "0x" }, final], 2);
    expect(second).toMatchObject({ id: 2, cache: "hit" });
    expect(second.error).toEqual(first.error);
    // a method the node does not know is its error, asked again each time
    const unknown = await call("eth_getBlockByNumber", ["0xnot-a-number", false]);
    expect(unknown.error).toBeDefined();
    expect((await call("eth_getBlockByNumber", ["0xnot-a-number", false])).cache).not.toBe("hit");
  });
});
