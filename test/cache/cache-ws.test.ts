import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { PlanSpec, StaticKey } from "../../src/config/types.js";
import { LocalQuotaLedger } from "../../src/plans/quota-ledger.js";
import { eventually } from "../support/eventually.js";
import {
  DOMAIN,
  KEYS,
  type RunningGateway,
  startGateway,
  TEST_KEYS,
  TEST_PLANS,
} from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// The answer cache over a WebSocket (docs/cache.md, "WebSockets"): a single call the label's cache may
// answer is answered from it with the caller's own id and never reaches the node; a batch, a subscription
// and a write always do; the same cache serves both connections of a label.

const HASH = `0x${"ab".repeat(32)}`;
const BLOCK = { number: "0x5", hash: HASH, parentHash: `0x${"cd".repeat(32)}`, transactions: [] };

/** A plan whose cached answers cost half (cachedShare 0.5), and `key` on it beside the test keys. */
function onHalfPrice(key: string): { plans: Record<string, PlanSpec>; keys: StaticKey[] } {
  return {
    plans: { ...TEST_PLANS, half: { ...(TEST_PLANS.shared as PlanSpec), dailyQuota: 1e9, cachedShare: 0.5 } },
    keys: [...TEST_KEYS, { key, networks: "*", plan: "half", rate: { perSecond: 1e6, burst: 1e6 } }],
  };
}

describe("the answer cache over a WebSocket", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const url = () => `ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`;
  const count = (method: string) => node.methods().filter((m) => m === method).length;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({ eth_getBlockByHash: BLOCK, eth_sendRawTransaction: `0x${"12".repeat(32)}` }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url] }, cache: { ...DEFAULT_CACHE, enabled: true } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("answers a final call from the cache, with each caller's id, on every connection of the label", async () => {
    const a = await Client.open(url());
    const b = await Client.open(url());
    const answers = [
      await a.call("eth_chainId"),
      await a.call("eth_chainId"),
      await b.call("eth_chainId"),
      await a.call("eth_getBlockByHash", [HASH, false]),
      await b.call("eth_getBlockByHash", [HASH, false]),
    ];
    expect(answers.map((x) => x.result)).toEqual(["0x1", "0x1", "0x1", BLOCK, BLOCK]);
    // each answer carries its own call's id (call() waits for the answer to the id it sent), a string id too
    b.ws.send('{"jsonrpc":"2.0","id":"the-caller\'s","method":"eth_chainId","params":[]}');
    expect(await b.waitFor((text) => text.includes('"id":"the-caller\'s"'))).toBe(
      '{"jsonrpc":"2.0","id":"the-caller\'s","result":"0x1"}',
    );
    expect(count("eth_chainId")).toBe(1);
    expect(count("eth_getBlockByHash")).toBe(1);
    expect(await gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "hit" })).toBe(4);
    a.close();
    b.close();
  });

  it("sends a write, a batch and a subscription to the node every time", async () => {
    const client = await Client.open(url());
    const before = count("eth_chainId");
    await client.call("eth_sendRawTransaction", ["0x02"]);
    await client.call("eth_sendRawTransaction", ["0x02"]);
    expect(count("eth_sendRawTransaction")).toBe(2);
    client.ws.send(JSON.stringify([{ jsonrpc: "2.0", id: 91, method: "eth_chainId", params: [] }]));
    await client.waitFor((text) => text.includes('"id":91'));
    expect(count("eth_chainId")).toBe(before + 1);
    const subscribed = await client.call("eth_subscribe", ["newHeads"]);
    expect(typeof subscribed.result).toBe("string");
    expect(count("eth_subscribe")).toBe(1);
    client.close();
  });
});

describe("a cached answer over a WebSocket costs the plan's cachedShare", () => {
  const key = "FNwsHalfPrice0000000000000000000";
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const quotas = new LocalQuotaLedger();

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode({ eth_getBlockByHash: BLOCK }));
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
      ...onHalfPrice(key),
      quotas,
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("a miss at its full price, each hit at half", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${key}`);
    await client.call("eth_getBlockByHash", [HASH, false]);
    const full = quotas.spent(key.slice(0, 8)).day;
    expect(full).toBeGreaterThan(0);
    await client.call("eth_getBlockByHash", [HASH, false]);
    await client.call("eth_getBlockByHash", [HASH, false]);
    expect(quotas.spent(key.slice(0, 8)).day).toBe(full + 2 * Math.round(full / 2));
    expect(node.methods().filter((m) => m === "eth_getBlockByHash")).toHaveLength(1);
    client.close();
  });
});

describe("identical calls in flight on a label's WebSockets reach the node once", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  /** The node holds each eth_getBlockByHash until the test lets it answer. */
  let release: () => void = () => {};
  let held = Promise.resolve();
  const hold = () => {
    held = new Promise((resolve) => {
      release = resolve;
    });
  };
  const url = () => `ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`;
  const asked = (hash: string) =>
    node.connections
      .flatMap((c) => c.messages)
      .filter((m) => m.includes("eth_getBlockByHash") && m.includes(hash)).length;
  const coalesced = () => gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "coalesced" });
  const waiting = () => gw.metric("gateway_cache_waiting", { label: "eth" });
  /** A key on a plan whose cached answers cost half (cachedShare 0.5). */
  const halfPrice = "FNwsFollowHalf000000000000000000";
  const quotas = new LocalQuotaLedger();
  const spent = () => quotas.spent(halfPrice.slice(0, 8)).day;
  /** The compute units the key's usage counted (keys/usage.ts), to hold beside what its quota spent. */
  let counted = 0;
  const send = (client: Client, id: string, hash: string) =>
    client.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBlockByHash", params: [hash, false] }),
    );
  const answerTo = (client: Client, id: string) => client.waitFor((text) => text.includes(`"id":"${id}"`));
  /** A connection's call for block `hash` held at the node, and an HTTP call for the same waiting on it. */
  const httpWaitingOnSocket = async (hash: string, id: number) => {
    const client = await Client.open(url());
    hold();
    send(client, "ws", hash);
    await eventually(() => asked(hash) === 1, 2_000, "the connection's call at the node");
    const overHttp = gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBlockByHash", params: [hash, false] }),
    });
    await eventually(async () => (await waiting()) === 1, 2_000, "the HTTP call waiting");
    return { client, overHttp };
  };

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({ eth_getBlockByHash: ([hash]: [string]) => held.then(() => ({ ...BLOCK, hash })) }),
    );
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
      ...onHalfPrice(halfPrice),
      quotas,
      usage: {
        record: (key, _label, _calls, _errors, units) => {
          if (key === halfPrice.slice(0, 8) || key === halfPrice) counted += units;
        },
      },
    });
  });
  afterAll(async () => {
    release();
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("the calls that arrive while the first is at the node get its answer, each with its own id", async () => {
    const hash = `0x${"01".repeat(32)}`;
    const [a, b, c] = await Promise.all([Client.open(url()), Client.open(url()), Client.open(url())]);
    hold();
    const before = await coalesced();
    send(a, "a", hash);
    await eventually(() => asked(hash) === 1, 2_000, "the first call at the node");
    send(b, "b", hash);
    send(c, "c", hash);
    send(a, "a2", hash);
    await eventually(async () => (await waiting()) === 3, 2_000, "three calls waiting");
    release();
    const answers = await Promise.all([
      answerTo(a, "a"),
      answerTo(b, "b"),
      answerTo(c, "c"),
      answerTo(a, "a2"),
    ]);
    expect(answers.map((text) => JSON.parse(text))).toEqual(
      ["a", "b", "c", "a2"].map((id) => ({ jsonrpc: "2.0", id, result: { ...BLOCK, hash } })),
    );
    expect(asked(hash)).toBe(1);
    expect(await coalesced()).toBe(before + 3);
    expect(await waiting()).toBe(0);
    for (const client of [a, b, c]) client.close();
  });

  it("a call whose id a node may refuse (1.5) leads no identical call: the next goes to the node itself", async () => {
    // anvil and reth answer such an id with "id":null, which would land the flight with nothing for 10 s
    const hash = `0x${"07".repeat(32)}`;
    const [a, b] = await Promise.all([Client.open(url()), Client.open(url())]);
    hold();
    a.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: 1.5, method: "eth_getBlockByHash", params: [hash, false] }),
    );
    await eventually(() => asked(hash) === 1, 2_000, "the first call at the node");
    send(b, "b", hash);
    await eventually(() => asked(hash) === 2, 2_000, "the second call at the node too");
    release();
    expect(JSON.parse(await answerTo(b, "b"))).toEqual({
      jsonrpc: "2.0",
      id: "b",
      result: { ...BLOCK, hash },
    });
    await a.waitFor((text) => text.includes('"id":1.5'));
    for (const client of [a, b]) client.close();
  });

  it("an HTTP call identical to a connection's call in flight waits for its answer", async () => {
    const hash = `0x${"03".repeat(32)}`;
    const { client, overHttp } = await httpWaitingOnSocket(hash, 7);
    release();
    const answer = await overHttp;
    expect(answer.status).toBe(200);
    expect(answer.headers["x-cache"]).toBe("coalesced");
    expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: { ...BLOCK, hash } });
    expect(JSON.parse(await answerTo(client, "ws"))).toEqual({
      jsonrpc: "2.0",
      id: "ws",
      result: { ...BLOCK, hash },
    });
    expect(asked(hash)).toBe(1);
    client.close();
  });

  it("an HTTP call waiting on a connection that closes goes to a node itself", async () => {
    const hash = `0x${"04".repeat(32)}`;
    const { client, overHttp } = await httpWaitingOnSocket(hash, 8);
    // counted once, by how it was answered: a miss, not coalesced as well
    const misses = await gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "miss" });
    const shared = await coalesced();
    client.close();
    // the node's port answers HTTP too: the call reaches it over HTTP, and waits there with the rest
    await eventually(
      () => node.httpMethods.includes("eth_getBlockByHash"),
      2_000,
      "the HTTP call at the node",
    );
    release();
    const answer = await overHttp;
    expect(answer.json).toEqual({ jsonrpc: "2.0", id: 8, result: { ...BLOCK, hash } });
    expect(answer.headers["x-cache"]).toBe("miss");
    expect(await gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "miss" })).toBe(
      misses + 1,
    );
    expect(await coalesced()).toBe(shared);
  });

  it("when the first call's connection closes before its answer, the others ask the node themselves", async () => {
    const hash = `0x${"02".repeat(32)}`;
    const [first, other] = await Promise.all([
      Client.open(url()),
      Client.open(`ws://eth.${DOMAIN}:${gw.port}/${halfPrice}`),
    ]);
    hold();
    const before = await coalesced();
    send(first, "first", hash);
    await eventually(() => asked(hash) === 1, 2_000, "the first call at the node");
    send(other, "other", hash);
    await eventually(async () => (await waiting()) === 1, 2_000, "the other call waiting");
    const misses = await gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "miss" });
    first.close();
    await eventually(() => asked(hash) === 2, 2_000, "the other call at the node");
    release();
    expect(JSON.parse(await answerTo(other, "other"))).toEqual({
      jsonrpc: "2.0",
      id: "other",
      result: { ...BLOCK, hash },
    });
    // it waited, then asked a node itself: a miss, not coalesced, at a miss's full price
    expect(await coalesced()).toBe(before);
    expect(await gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "miss" })).toBe(
      misses + 1,
    );
    const followed = spent();
    // its usage counts what its quota spent: a miss's full price, counted once it had its answer
    expect(counted).toBe(followed);
    other.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: "miss",
        method: "eth_getBlockByHash",
        params: [`0x${"05".repeat(32)}`, false],
      }),
    );
    await answerTo(other, "miss");
    expect(followed).toBeGreaterThan(0);
    expect(spent() - followed).toBe(followed);
    other.close();
  });
});

// A connection's node is the one it opened on, which may be a block behind the head the label served to
// HTTP callers: what it answers at the head is the connection's own. Kept, it went to HTTP callers as a hit
// after they had been served the higher head.
describe("an answer at the head from a connection's node behind the served head", () => {
  let nodes: LoopbackWsNode[];
  let httpNodes: LoopbackNode[];
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    // each node's balance of any address: what it read at its own head
    const heads = [
      { eth_blockNumber: "0xa", eth_getBalance: "0x2" },
      { eth_blockNumber: "0x9", eth_getBalance: "0x1" },
    ];
    nodes = await Promise.all(heads.map((results) => startLoopbackWsNode(evmNode(results))));
    httpNodes = await Promise.all(
      heads.map((results) => startLoopbackNode(jsonRpcResponder({ ...results, eth_chainId: "0x1" }))),
    );
    gw = await startGateway({
      upstreams: {
        eth: nodes.map((node, i) => ({
          url: httpNodes[i]?.url as string,
          ws: node.wsUrl,
          name: i === 0 ? "ahead" : "behind",
        })),
      },
      cache: { ...DEFAULT_CACHE, enabled: true, headMaxAgeMs: 60_000 },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    const read = () => gw.gateway.upstreams.group("eth", "/")?.members.map((m) => m.health.head);
    await eventually(() => read()?.join() === "10,9", 5_000, "both nodes' heads read");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...(nodes ?? []), ...(httpNodes ?? [])].map((node) => node.close()));
    restore?.();
  });

  it("is the connection's alone: HTTP callers never get it from the cache", async () => {
    const balance = async (address: string) =>
      (
        await gw.call("eth", `/${KEYS.all}`, {
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "eth_getBalance",
            params: [address, "latest"],
          }),
        })
      ).json as { result: string };
    const addressOf = (i: number) => `0x${String(i).padStart(40, "0")}`;
    // the label has served block 10
    expect((await balance(addressOf(99))).result).toBe("0x2");
    // a connection opens on a node at the served head while one is in rotation: with the one ahead cordoned
    // a moment, it opens on the one behind, and keeps it (as one whose node fell behind since would)
    const ahead = gw.gateway.upstreams.group("eth", "/")?.members[0];
    ahead?.health.cordon(true);
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    // with no node at the served head in rotation, its read at the head is its own node's
    expect((await client.call("eth_getBalance", [addressOf(1), "latest"])).result).toBe("0x1");
    ahead?.health.cordon(false);
    expect((await balance(addressOf(1))).result).toBe("0x2");
    // with one, its reads at the head go there (ws/head-reads.ts)
    expect((await client.call("eth_getBalance", [addressOf(2), "latest"])).result).toBe("0x2");
    client.close();
  });
});

// Two calls with one id in flight on a connection: the node's answers carry the id alone, so they cannot be
// told apart, and a call the cache missed would keep the other's answer as its own, for every caller of the
// label. The second is refused while the first waits.
describe("a call whose id is still in flight on its connection", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const hash = (n: number) => `0x${String(n).padStart(64, "0")}`;
  /** The node holds block 1's answer until the test lets it go: the first call is in flight meanwhile. */
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({
        // each block by its own hash
        eth_getBlockByHash: async (params: unknown) => {
          const [blockHash] = params as string[];
          if (blockHash === hash(1)) await held;
          return { number: "0x5", hash: blockHash, transactions: [] };
        },
      }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url] }, cache: { ...DEFAULT_CACHE, enabled: true } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("is refused, and no caller is ever given one block for another", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    // one id by its value, written two ways: a node that writes ids back by value answers both as "a"
    const call = (n: number, id: string) =>
      `{"jsonrpc":"2.0","id":${id},"method":"eth_getBlockByHash","params":["${hash(n)}",false]}`;
    client.ws.send(call(1, '"a"'));
    client.ws.send(call(2, '"\\u0061"'));
    const refused = JSON.parse(await client.waitFor((text) => text.includes('"error"'))) as {
      error: { code: number; data: { reason: string } };
    };
    expect(refused.error.code).toBe(-32600);
    expect(refused.error.data.reason).toContain("still waiting");
    release();
    const answered = JSON.parse(await client.waitFor((text) => text.includes('"result"'))) as {
      result: { hash: string };
    };
    expect(answered.result.hash).toBe(hash(1));
    // another caller of the label, from the cache or the node: each block by its own hash, and at once
    // (the refused call opened nothing for it to wait on), while the first connection stays open
    const other = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    for (const n of [2, 1]) {
      const got = await other.call("eth_getBlockByHash", [hash(n), false], 3_000);
      expect((got.result as { hash: string }).hash).toBe(hash(n));
    }
    other.close();
    client.close();
  });
});

// A call the gateway refuses when it would send it (its id still in flight) costs nothing and counts as
// refused, as a refusal at the checks does (docs/compute-units.md): it was charged against the quota.
describe("a call refused at sending over a WebSocket", () => {
  const key = "FNwsRefusedAtSend00000000000000000";
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const quotas = new LocalQuotaLedger();

  beforeAll(async () => {
    restore = resolveTestHosts();
    // the node holds the first call's answer: its id stays in flight
    node = await startLoopbackWsNode(evmNode({ eth_getBalance: () => new Promise(() => {}) }));
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      plans: { ...TEST_PLANS, metered: { ...(TEST_PLANS.shared as PlanSpec), dailyQuota: 1e9 } },
      keys: [{ key, networks: "*", plan: "metered", rate: { perSecond: 1e6, burst: 1e6 } }],
      quotas,
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("costs nothing", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${key}`);
    const call = `{"jsonrpc":"2.0","id":7,"method":"eth_getBalance","params":["0x${"ab".repeat(20)}","latest"]}`;
    client.send(call);
    await waitForMethod(node, "eth_getBalance");
    const spent = quotas.spent(key.slice(0, 8)).day;
    expect(spent).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) client.send(call);
    await eventually(
      () => client.received.filter((t) => t.includes("still waiting")).length === 5,
      3_000,
      "5 refusals",
    );
    expect(quotas.spent(key.slice(0, 8)).day).toBe(spent);
    client.close();
  });
});

function waitForMethod(node: LoopbackWsNode, method: string): Promise<number> {
  return eventually(() => node.methods().includes(method), 3_000, `${method} at the node`);
}
