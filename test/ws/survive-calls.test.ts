import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode, waitUntil } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

/** A gateway whose eth connections open on `a`, and move to `b` (its fallback) when `a` goes. */
function gatewayOn(a: LoopbackWsNode, b: LoopbackWsNode): Promise<RunningGateway> {
  return startGateway({
    upstreams: {
      eth: [
        { url: a.url, name: "a" },
        { url: b.url, name: "b", tier: "fallback" },
      ],
    },
  });
}

// What a move does to the calls and ids of one connection, seen message by message at both nodes: `a`
// (where the connection opens) holds a write and a read unanswered when it goes; `b` takes the
// connection, gets the read again and never the write, and knows the subscription under its own id.

describe("a moved connection's calls in flight and subscription ids", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const never = () => new Promise(() => {});

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackWsNode(evmNode({ eth_sendRawTransaction: never, eth_getBalance: never }));
    b = await startLoopbackWsNode({
      ...evmNode({ eth_getBalance: "0x2a", eth_sendRawTransaction: "0xfeed" }),
      subscriptionId: (n) => `0xb0b${n}`,
    });
    gw = await gatewayOn(a, b);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("a read in flight is sent again on the new node, a write is not; the client keeps its subscription id for notifications and unsubscribe", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const subscribed = await client.call("eth_subscribe", ["newHeads"]);
    const id = subscribed.result as string;
    expect(a.latest().subscriptions.has(id)).toBe(true);
    client.send('{"jsonrpc":"2.0","id":"write","method":"eth_sendRawTransaction","params":["0x02f8"]}');
    client.send(
      '{"jsonrpc":"2.0","id":"read","method":"eth_getBalance","params":["0x00000000000000000000000000000000000000aa","latest"]}',
    );
    await waitUntil(() => a.methods().includes("eth_getBalance"), 3_000, "both calls at a");

    await a.close();
    const write = await client.answerTo('"write"');
    expect(write.error?.data?.code).toBe("WRITE_NOT_CONFIRMED");
    // counted as the error it ended as, and logged as an HTTP request the gateway failed is, by its request id
    expect(
      await gw.metric("gateway_requests_total", {
        method: "eth_sendRawTransaction",
        code: "WRITE_NOT_CONFIRMED",
      }),
    ).toBe(1);
    expect(await gw.metric("gateway_requests_total", { method: "eth_sendRawTransaction", code: "" })).toBe(0);
    const requestId = write.error?.data?.requestId as string;
    expect(
      gw.logs.some(
        (line) =>
          line.includes('"websocket message"') &&
          line.includes("WRITE_NOT_CONFIRMED") &&
          line.includes(requestId) &&
          // the node it was lost at
          line.includes('"upstream":"a"'),
      ),
    ).toBe(true);
    expect((await client.answerTo('"read"')).result).toBe("0x2a");
    // the write reached the upstreams once, at a
    expect([...a.methods(), ...b.methods()].filter((m) => m === "eth_sendRawTransaction")).toHaveLength(1);
    expect(b.latest().methods()).toEqual(["eth_subscribe", "eth_getBalance"]);

    const [onB] = [...b.latest().subscriptions.values()];
    expect(onB?.id).not.toBe(id);
    const from = client.received.length;
    onB?.notify({ number: "0x5", parentHash: `0x${"44".repeat(32)}` });
    const pushed = JSON.parse(await client.waitFor((t) => t.includes("eth_subscription"), 3_000, from));
    expect(pushed.params).toEqual({
      subscription: id,
      result: { number: "0x5", parentHash: `0x${"44".repeat(32)}` },
    });

    expect((await client.call("eth_unsubscribe", [id])).result).toBe(true);
    const unsubscribe = b.latest().messages.find((m) => m.includes("eth_unsubscribe"));
    expect(JSON.parse(unsubscribe as string).params).toEqual([onB?.id]);
    expect(onB?.active).toBe(false);
    expect(client.isOpen).toBe(true);
    client.close();
  });
});

// The same, with ids written otherwise than JSON writes them (`-0`, `1.0`, an escaped string): a connection
// keeps its calls by their id's value, and a move finds them by it too.
describe("a moved connection's calls in flight, whose ids are written in other forms", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const never = () => new Promise(() => {});

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackWsNode(evmNode({ eth_sendRawTransaction: never, eth_getBalance: never }));
    b = await startLoopbackWsNode(evmNode({ eth_getBalance: "0x2a", eth_sendRawTransaction: "0xfeed" }));
    gw = await gatewayOn(a, b);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("a read is sent again on the new node and answered, a write is answered WRITE_NOT_CONFIRMED", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const reads = ["1.0", '"\\u0072"'];
    client.send('{"jsonrpc":"2.0","id":-0,"method":"eth_sendRawTransaction","params":["0x02f8"]}');
    for (const id of reads)
      client.send(
        `{"jsonrpc":"2.0","id":${id},"method":"eth_getBalance","params":["0x00000000000000000000000000000000000000aa","latest"]}`,
      );
    await waitUntil(
      () => a.methods().filter((m) => m === "eth_getBalance").length === 2,
      3_000,
      "the calls at a",
    );
    await a.close();
    expect((await client.answerTo("-0")).error?.data?.code).toBe("WRITE_NOT_CONFIRMED");
    for (const id of reads) expect((await client.answerTo(id)).result, id).toBe("0x2a");
    client.close();
  });
});

// An unsubscribe in flight inside a batch when the node goes: its subscription was on the lost node, so it
// is answered true inside the batch's answer, and the subscription is not made again on the new node.
describe("a batch's unsubscribe in flight when the node goes", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const never = () => new Promise(() => {});

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackWsNode(evmNode({ eth_unsubscribe: never, eth_chainId: never }));
    b = await startLoopbackWsNode({ ...evmNode({ eth_chainId: "0x1" }), subscriptionId: (n) => `0xb0b${n}` });
    gw = await gatewayOn(a, b);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("is answered true in the batch's answer, and the subscription is not made again", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const id = (await client.call("eth_subscribe", ["newHeads"])).result as string;
    client.send(
      `[{"jsonrpc":"2.0","id":"u","method":"eth_unsubscribe","params":["${id}"]},{"jsonrpc":"2.0","id":"c","method":"eth_chainId","params":[]}]`,
    );
    await waitUntil(() => a.methods().includes("eth_unsubscribe"), 3_000, "the batch at a");
    await a.close();
    const answer = JSON.parse(await client.waitFor((t) => t.includes('"u"'), 3_000)) as {
      id: string;
      result?: unknown;
    }[];
    expect(answer.find((x) => x.id === "u")?.result).toBe(true);
    expect(answer.find((x) => x.id === "c")?.result).toBe("0x1");
    // b got the read alone: no subscription made again, no unsubscribe of a's id
    expect(b.latest().methods()).toEqual(["eth_chainId"]);
    expect(client.isOpen).toBe(true);
    client.close();
  });
});

// An answer over limits.upstream.maxResponseBytes on a WebSocket: refused by its id, as over HTTP. Taken
// for a lost socket, the call went to a node four times and the connection closed with 1014.
describe("a node's answer over the size cap on a WebSocket", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    const log = { address: `0x${"11".repeat(20)}`, data: `0x${"00".repeat(64)}`, topics: [] };
    node = await startLoopbackWsNode(
      // a contract's code past four times the cap: the node's socket closes on it (1009)
      evmNode({ eth_getLogs: Array.from({ length: 15 }, () => log), eth_getCode: `0x${"ab".repeat(5_000)}` }),
    );
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, maxResponseBytes: 2_000 } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("gets UPSTREAM_RESPONSE_TOO_LARGE by its id; the node is asked once and the connection stays", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    expect((await client.call("eth_subscribe", ["newHeads"])).error).toBeUndefined();
    const big = await client.call("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x1" }]);
    expect(big.error?.data?.code).toBe("UPSTREAM_RESPONSE_TOO_LARGE");
    expect(node.methods().filter((m) => m === "eth_getLogs")).toHaveLength(1);
    expect((await client.call("eth_chainId")).result).toBe("0x1");
    // one socket to the node all along: the subscription was never made again
    expect(node.methods().filter((m) => m === "eth_subscribe")).toHaveLength(1);
    expect(client.isOpen).toBe(true);
    client.close();
  });

  it("past four times the cap, the node's socket closes: the message alone in flight gets UPSTREAM_RESPONSE_TOO_LARGE, is not sent again, and the connection stays, however often", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    expect((await client.call("eth_subscribe", ["newHeads"])).error).toBeUndefined();
    const before = node.methods().filter((m) => m === "eth_getCode").length;
    client.ws.send(
      JSON.stringify([
        { jsonrpc: "2.0", id: "c1", method: "eth_getCode", params: [`0x${"22".repeat(20)}`, "latest"] },
        { jsonrpc: "2.0", id: "c2", method: "eth_chainId", params: [] },
      ]),
    );
    await waitUntil(() => client.received.some((m) => m.startsWith("[")), 5_000, "the batch's answer");
    const answers = JSON.parse(client.received.find((m) => m.startsWith("[")) as string) as {
      id: string;
      error?: { data?: { code?: string } };
    }[];
    // one message, one answer: each of its calls is refused by its id
    expect(answers.map((a) => [a.id, a.error?.data?.code])).toEqual([
      ["c1", "UPSTREAM_RESPONSE_TOO_LARGE"],
      ["c2", "UPSTREAM_RESPONSE_TOO_LARGE"],
    ]);
    // a caller's answer is no sign of the node's: the same call again and again loses no subscription
    for (let i = 0; i < 4; i++) {
      const big = await client.call("eth_getCode", [`0x${"22".repeat(20)}`, "latest"]);
      expect(big.error?.data?.code).toBe("UPSTREAM_RESPONSE_TOO_LARGE");
    }
    expect(node.methods().filter((m) => m === "eth_getCode").length - before).toBe(5);
    expect((await client.call("eth_chainId")).result).toBe("0x1");
    expect(client.isOpen).toBe(true);
    client.close();
  });
});

// A node that numbers its subscription ids in order (Besu) may give a new subscription, after a move, the
// id another node gave one the client holds: the client gets a fresh id for the new one, and both keep
// their notifications and their unsubscribes.
describe("a new subscription whose id the node gives is one the client holds already", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    // a's first id is b's second: 0x1001
    a = await startLoopbackWsNode({ ...evmNode(), subscriptionId: (n) => `0x${(0x1001 + n).toString(16)}` });
    b = await startLoopbackWsNode(evmNode());
    gw = await gatewayOn(a, b);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  it("is given a fresh id, and each subscription keeps its own notifications and unsubscribe", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const moved = (await client.call("eth_subscribe", ["newHeads"])).result;
    expect(moved).toBe("0x1001");
    await a.close();
    await waitUntil(
      () => b.connections.length === 1 && b.latest().subscriptions.size === 1,
      3_000,
      "moved to b",
    );
    const fresh = (await client.call("eth_subscribe", ["newHeads"])).result as string;
    expect(fresh).not.toBe(moved);
    expect(fresh).toMatch(/^0x[0-9a-f]+$/);
    const onB = b.latest().subscriptions;
    expect([...onB.keys()].sort()).toEqual(["0x1000", "0x1001"]);
    const from = client.received.length;
    onB.get("0x1000")?.notify({ number: "0x5", parentHash: `0x${"44".repeat(32)}` });
    onB.get("0x1001")?.notify({ number: "0x6", parentHash: `0x${"55".repeat(32)}` });
    await client.waitFor(
      () => client.received.slice(from).filter((t) => t.includes("eth_subscription")).length === 2,
    );
    const pushed = client.received
      .slice(from)
      .filter((t) => t.includes("eth_subscription"))
      .map((t) => JSON.parse(t).params);
    expect(pushed.map((p) => [p.subscription, p.result.number])).toEqual([
      [moved, "0x5"],
      [fresh, "0x6"],
    ]);
    expect((await client.call("eth_unsubscribe", [fresh])).result).toBe(true);
    expect(onB.get("0x1001")?.active ?? false).toBe(false);
    expect(onB.get("0x1000")?.active).toBe(true);
    client.close();
  });
});
