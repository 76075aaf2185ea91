import type { Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { WebSocketLimits } from "../../src/config/types.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import {
  evmNode,
  type LoopbackWsNode,
  startLoopbackWsNode,
  type WsNodeConnection,
  waitUntil,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// Each WebSocket bound, broken by one client, while another well-behaved client on the same gateway keeps
// getting answers during and after. Clients are the `ws` package's, at `ws://<label>.gw.test:<port>/<KEY>`.

import { Client, type RpcAnswer, rawIdOf } from "../support/ws-client.js";

/** A well-behaved client that calls `method` in a loop and counts the answers. */
interface Witness {
  readonly client: Client;
  answers(): number;
  /** Stops the loop, then checks one more call is answered and the socket is still open. */
  stop(): Promise<void>;
}

async function startWitness(url: string, method: string, expected: unknown): Promise<Witness> {
  const client = await Client.open(url);
  let answers = 0;
  let running = true;
  let failure: unknown;
  const loop = (async () => {
    while (running) {
      try {
        const answer = await client.call(method);
        if (answer.result === undefined || JSON.stringify(answer.result) !== JSON.stringify(expected))
          throw new Error(`witness got ${JSON.stringify(answer)}`);
        answers++;
      } catch (error) {
        failure = error;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    client,
    answers: () => answers,
    async stop() {
      running = false;
      await loop;
      if (failure !== undefined) throw failure;
      expect((await client.call(method)).result).toEqual(expected);
      expect(client.isOpen).toBe(true);
    },
  };
}

/** Waits until the witness has `more` answers beyond `since`. */
async function witnessAnswers(witness: Witness, since: number, more = 3): Promise<void> {
  await waitUntil(() => witness.answers() >= since + more, 3_000, "the witness to keep getting answers");
}

/** A key whose rate allows two calls and then (practically) none. */
const SLOW_KEY = "FNtestSlowRate0000000000000000";

describe("WebSocket bounds", () => {
  let node: LoopbackWsNode;
  let restore: () => void;
  /** Held eth_getBalance answers wait for this. */
  let gate: Promise<void> = Promise.resolve();
  const running: RunningGateway[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({
        eth_getBalance: async () => {
          await gate;
          return "0xde0b6b3a7640000";
        },
        debug_traceTransaction: { structLogs: [] },
      }),
    );
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const gw of running.splice(0)) await gw.close();
    gate = Promise.resolve();
  });
  afterAll(async () => {
    await node?.close();
    restore?.();
  });

  async function gatewayWith(ws: Partial<WebSocketLimits>, upstreams?: Record<string, string[]>) {
    const gw = await startGateway({
      limits: { ws: { ...DEFAULT_LIMITS.ws, ...ws } },
      upstreams: upstreams ?? { eth: [node.url] },
      keys: [...TEST_KEYS, { key: SLOW_KEY, networks: "*", rate: { perSecond: 0.001, burst: 2 } }],
    });
    running.push(gw);
    return gw;
  }

  const urlOf = (gw: RunningGateway, key: string = KEYS.all, label = "eth") =>
    `ws://${label}.${DOMAIN}:${gw.port}/${key}`;

  async function open(url: string): Promise<{ client: Client; upstream: WsNodeConnection }> {
    const client = await Client.open(url);
    clients.push(client);
    // the upstream socket opens before the handshake completes: the newest one is this client's
    return { client, upstream: node.latest() };
  }

  async function witnessOn(gw: RunningGateway, chainId = "0x1"): Promise<Witness> {
    const witness = await startWitness(urlOf(gw, KEYS.dedicated), "eth_chainId", chainId);
    clients.push(witness.client);
    return witness;
  }

  it("a message over maxMessageBytes closes with 1009 and its upstream socket closes; one at the bound passes", async () => {
    const max = 64 * 1024;
    const gw = await gatewayWith({ maxMessageBytes: max });
    const witness = await witnessOn(gw);
    const { client, upstream } = await open(urlOf(gw));

    const call = '{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber","params":[]}';
    const atBound = call + " ".repeat(max - call.length);
    expect(Buffer.byteLength(atBound)).toBe(max);
    client.send(atBound);
    expect((await client.answerTo("7")).result).toBe("0x10");

    const since = witness.answers();
    const over = `{"jsonrpc":"2.0","id":8,"method":"eth_blockNumber","params":["${"a".repeat(max)}"]}`;
    client.send(over);
    expect((await client.closed).code).toBe(1009);
    await waitUntil(() => !upstream.isOpen, 3_000, "the upstream socket to close");
    // the oversized message never reached the node
    expect(upstream.methods()).toEqual(["eth_blockNumber"]);
    await witnessAnswers(witness, since);
    await witness.stop();
  });

  it("invalid UTF-8 in a text message closes with 1007 and its upstream socket closes", async () => {
    const gw = await gatewayWith({});
    const witness = await witnessOn(gw);
    const { client, upstream } = await open(urlOf(gw));
    const since = witness.answers();
    // a text frame whose bytes are not UTF-8
    client.send(
      Buffer.concat([
        Buffer.from('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":["'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"]}'),
      ]),
      false,
    );
    expect((await client.closed).code).toBe(1007);
    await waitUntil(() => !upstream.isOpen, 3_000, "the upstream socket to close");
    expect(upstream.messages).toEqual([]);
    await witnessAnswers(witness, since);
    await witness.stop();
  });

  it("a client that never reads is closed with 1008 once maxBufferedBytes is passed, and its upstream socket closes", async () => {
    const gw = await gatewayWith({ maxBufferedBytes: 256 * 1024 });
    const witness = await witnessOn(gw);
    const { client } = await open(urlOf(gw));
    const subscribed = await client.call("eth_subscribe", ["newHeads"]);
    const subscriptionId = subscribed.result as string;
    expect(typeof subscriptionId).toBe("string");
    const upstream = node.connections.find((c) => c.subscriptions.has(subscriptionId));
    if (upstream === undefined) throw new Error("no upstream connection holds the subscription");
    const subscription = upstream.subscriptions.get(subscriptionId);
    if (subscription === undefined) throw new Error("no subscription");

    // the client stops reading: nothing it is sent leaves the kernel buffers
    const socket = (client.ws as unknown as { _socket: Socket })._socket;
    socket.pause();
    const since = witness.answers();
    const payload = `0x${"ab".repeat(32 * 1024)}`;
    const limit = 96 * 1024 * 1024;
    let pushed = 0;
    while (upstream.isOpen && pushed < limit) {
      for (let i = 0; i < 8; i++) {
        subscription.notify({ number: `0x${pushed.toString(16)}`, extraData: payload });
        pushed += payload.length;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    // the gateway gave up on the client rather than buffering what the node kept sending
    await waitUntil(() => !upstream.isOpen, 5_000, "the upstream socket to close");
    expect(pushed).toBeLessThan(limit);
    // the witness is answered after the node flooded the other client: the flood lasts only until the
    // kernel buffers fill (tens of ms), shorter than a loaded machine may take to run the witness's timer
    await witnessAnswers(witness, since);

    // reading again, the client finds the close frame behind what was buffered
    socket.resume();
    expect((await client.closed).code).toBe(1008);
    await witnessAnswers(witness, witness.answers());
    await witness.stop();
  });

  it("a subscription over maxSubscriptions gets TOO_MANY_SUBSCRIPTIONS, the socket stays open, and a slot freed by eth_unsubscribe is reusable (anvil)", async () => {
    let anvil: Anvil | undefined;
    try {
      anvil = await startAnvil();
      const gw = await gatewayWith({ maxSubscriptions: 2 }, { eth: [anvil.url] });
      const witness = await witnessOn(gw, "0x7a69");
      const client = await Client.open(urlOf(gw));
      clients.push(client);
      const since = witness.answers();

      const first = await client.call("eth_subscribe", ["newHeads"]);
      const second = await client.call("eth_subscribe", ["newHeads"]);
      expect(typeof first.result).toBe("string");
      expect(typeof second.result).toBe("string");
      const third = await client.call("eth_subscribe", ["newHeads"]);
      expect(third.result).toBeUndefined();
      expect(third.error).toMatchObject({
        code: -32005,
        data: { code: "TOO_MANY_SUBSCRIPTIONS", maxSubscriptions: 2 },
      });
      expect(client.isOpen).toBe(true);
      expect((await client.call("eth_chainId")).result).toBe("0x7a69");

      // both live subscriptions get the mined block
      const from = client.received.length;
      await anvil.rpc("evm_mine");
      for (const id of [first.result, second.result]) {
        await client.waitFor(
          (t) => t.includes('"eth_subscription"') && t.includes(`"${id as string}"`),
          3_000,
          from,
        );
      }

      expect((await client.call("eth_unsubscribe", [first.result])).result).toBe(true);
      const again = await client.call("eth_subscribe", ["newHeads"]);
      expect(typeof again.result).toBe("string");
      // full again
      const over = await client.call("eth_subscribe", ["newHeads"]);
      expect(over.error?.data?.code).toBe("TOO_MANY_SUBSCRIPTIONS");

      // slots are taken when a call is sent: a burst of three after freeing both gets two
      expect((await client.call("eth_unsubscribe", [second.result])).result).toBe(true);
      expect((await client.call("eth_unsubscribe", [again.result])).result).toBe(true);
      const ids = [101, 102, 103];
      for (const id of ids)
        client.send(JSON.stringify({ jsonrpc: "2.0", id, method: "eth_subscribe", params: ["newHeads"] }));
      const burst = await Promise.all(ids.map((id) => client.answerTo(String(id))));
      expect(burst.filter((a) => typeof a.result === "string")).toHaveLength(2);
      expect(burst.filter((a) => a.error?.data?.code === "TOO_MANY_SUBSCRIPTIONS")).toHaveLength(1);

      expect(client.isOpen).toBe(true);
      await witnessAnswers(witness, since);
      await witness.stop();
    } finally {
      for (const client of clients.splice(0)) client.close();
      for (const gw of running.splice(0)) await gw.close();
      await anvil?.stop();
    }
  });

  it("a call over maxInFlight gets TOO_MANY_IN_FLIGHT without reaching the node; the socket stays open", async () => {
    const gw = await gatewayWith({ maxInFlight: 3 });
    const witness = await witnessOn(gw);
    const { client, upstream } = await open(urlOf(gw));
    let release: () => void = () => {};
    gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const since = witness.answers();
    const address = "0x000000000000000000000000000000000000dEaD";
    for (const id of [1, 2, 3])
      client.send(
        JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBalance", params: [address, "latest"] }),
      );
    await waitUntil(() => upstream.methods().length === 3, 3_000, "three held calls at the node");

    client.send('{"jsonrpc":"2.0","id":4,"method":"eth_blockNumber","params":[]}');
    const refused = await client.answerTo("4");
    expect(refused.error).toMatchObject({
      code: -32005,
      data: { code: "TOO_MANY_IN_FLIGHT", maxInFlight: 3 },
    });
    expect(client.isOpen).toBe(true);
    // the witness has its own in-flight budget
    await witnessAnswers(witness, since);

    release();
    for (const id of ["1", "2", "3"]) expect((await client.answerTo(id)).result).toBe("0xde0b6b3a7640000");
    expect((await client.call("eth_blockNumber")).result).toBe("0x10");
    expect(upstream.methods()).toEqual([
      "eth_getBalance",
      "eth_getBalance",
      "eth_getBalance",
      "eth_blockNumber",
    ]);
    await witness.stop();
  });

  it("a third connection for a key over maxConnectionsPerKey 2 gets HTTP 429 before the handshake", async () => {
    const gw = await gatewayWith({ maxConnectionsPerKey: 2 });
    const witness = await witnessOn(gw);
    const since = witness.answers();
    const url = urlOf(gw, KEYS.noArchive);
    const a = await open(url);
    await open(url);
    const before = node.connections.length;
    const refused = await Client.refused(url);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32005, data: { code: "TOO_MANY_CONNECTIONS", maxConnectionsPerKey: 2 } },
    });
    // refused before any upstream socket was opened
    expect(node.connections.length).toBe(before);
    await witnessAnswers(witness, since);

    // one leaves (its slot is given back when its relay ends): a new one is let in
    a.client.ws.close();
    await waitUntil(() => !a.upstream.isOpen, 3_000, "the upstream socket to close");
    const c = await open(url);
    expect((await c.client.call("eth_chainId")).result).toBe("0x1");
    await witness.stop();
  });

  it("methods off the allow-list or off the plan get a JSON-RPC error and the socket stays open", async () => {
    const gw = await gatewayWith({});
    const witness = await witnessOn(gw);
    const { client, upstream } = await open(urlOf(gw));
    const since = witness.answers();

    const admin = await client.call("admin_peers");
    expect(admin.error).toMatchObject({
      code: -32601,
      data: { code: "METHOD_NOT_FOUND", method: "admin_peers" },
    });
    const trace = await client.call("debug_traceTransaction", [`0x${"ab".repeat(32)}`]);
    expect(trace.error).toMatchObject({
      code: -32042,
      data: { code: "METHOD_NOT_ON_PLAN", method: "debug_traceTransaction" },
    });
    expect(client.isOpen).toBe(true);
    expect((await client.call("eth_blockNumber")).result).toBe("0x10");
    expect(upstream.methods()).toEqual(["eth_blockNumber"]);

    // the same call from a dedicated-plan key goes through
    const dedicated = await open(urlOf(gw, KEYS.dedicated));
    expect((await dedicated.client.call("debug_traceTransaction", [`0x${"ab".repeat(32)}`])).result).toEqual({
      structLogs: [],
    });
    await witnessAnswers(witness, since);
    await witness.stop();
  });

  it("a batch with an allowed and a denied call is answered in one array holding both", async () => {
    const gw = await gatewayWith({});
    const witness = await witnessOn(gw);
    const { client, upstream } = await open(urlOf(gw));
    client.send(
      '[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]},{"jsonrpc":"2.0","id":2,"method":"admin_peers","params":[]}]',
    );
    const text = await client.waitFor((t) => t.trimStart().startsWith("["));
    const answers = JSON.parse(text) as RpcAnswer[];
    expect(answers).toHaveLength(2);
    const byId = new Map(answers.map((a) => [a.id, a]));
    expect(byId.get(1)?.result).toBe("0x10");
    expect(byId.get(2)?.error).toMatchObject({ code: -32601, data: { code: "METHOD_NOT_FOUND" } });
    // only the allowed call reached the node, still as a batch
    expect(upstream.messages).toHaveLength(1);
    expect(JSON.parse(upstream.messages[0] as string)).toEqual([
      { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] },
    ]);

    // all refused: answered by the gateway alone
    client.send('[{"jsonrpc":"2.0","id":3,"method":"admin_peers","params":[]}]');
    const refused = JSON.parse(await client.waitFor((t) => t.includes('"id":3'))) as RpcAnswer[];
    expect(refused).toHaveLength(1);
    expect(refused[0]?.error?.data?.code).toBe("METHOD_NOT_FOUND");
    expect(upstream.messages).toHaveLength(1);
    expect(client.isOpen).toBe(true);
    await witness.stop();
  });

  it("a message goes to the node as received only when nothing in it could read differently there", async () => {
    const gw = await gatewayWith({});
    const witness = await witnessOn(gw);
    const { client, upstream } = await open(urlOf(gw));
    const spaced = ' { "id": 1, "method": "eth_blockNumber", "jsonrpc": "2.0" } ';
    // its own ids: a call whose id is still in flight on the connection is refused (docs/websocket.md)
    const spacedBatch = `[ ${spaced.replace('"id": 1', '"id": 6')},\n{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]} ]`;
    const rewritten = [
      '{"jsonrpc":"2.0","id":3,"method":"eth_\\u0062lockNumber","params":[]}',
      '{"jsonrpc":"2.0","id":4,"\\u006dethod":"eth_blockNumber"}',
      '{"jsonrpc":"2.0","id":5,"method":"eth_blockNumber","params":[],"extra":{"method":"admin_peers"}}',
    ];
    for (const message of [spaced, spacedBatch, ...rewritten]) client.send(message);
    await waitUntil(() => upstream.messages.length === 5, 3_000, "five messages at the node");
    expect(upstream.messages).toEqual([
      spaced,
      spacedBatch,
      '{"jsonrpc":"2.0","id":3,"method":"eth_blockNumber","params":[]}',
      '{"jsonrpc":"2.0","id":4,"method":"eth_blockNumber"}',
      '{"jsonrpc":"2.0","id":5,"method":"eth_blockNumber","params":[]}',
    ]);
    await witness.stop();
  });

  it("a batch of a notification and a refused call is answered with the refusal", async () => {
    // JSON-RPC 2.0 §6: the answer to a batch holds a response for each call with an id; the node sends
    // nothing for a batch of notifications, so the gateway must answer the refused call itself.
    const gw = await gatewayWith({});
    const witness = await witnessOn(gw);
    const { client, upstream } = await open(urlOf(gw));
    client.send(
      '[{"jsonrpc":"2.0","method":"eth_blockNumber","params":[]},{"jsonrpc":"2.0","id":5,"method":"admin_peers","params":[]}]',
    );
    await waitUntil(() => upstream.messages.length === 1, 3_000, "the notification at the node");
    const text = await client.waitFor((t) => t.includes('"id":5'), 2_000);
    const answers = JSON.parse(text) as RpcAnswer[];
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ id: 5, error: { code: -32601, data: { code: "METHOD_NOT_FOUND" } } });
    expect(client.isOpen).toBe(true);
    await witness.stop();
  });

  it("a call over the key's rate is refused with RATE_LIMITED and its own id; the socket stays open", async () => {
    const gw = await gatewayWith({});
    const witness = await witnessOn(gw);
    const { client } = await open(urlOf(gw, SLOW_KEY));
    expect((await client.call("eth_chainId")).result).toBe("0x1");
    expect((await client.call("eth_chainId")).result).toBe("0x1");
    client.send('{"jsonrpc":"2.0","id":"third","method":"eth_chainId","params":[]}');
    const limited = await client.waitFor((t) => t.includes("RATE_LIMITED"));
    expect(JSON.parse(limited)).toMatchObject({
      id: "third",
      error: { code: -32005, data: { code: "RATE_LIMITED" } },
    });
    expect(rawIdOf(limited)).toBe('"third"');
    // a batch over the rate: each call by its id, those refused on their own with their own refusal
    client.send(
      '[{"jsonrpc":"2.0","id":"x","method":"eth_chainId","params":[]},{"jsonrpc":"2.0","id":"y","method":"admin_peers","params":[]}]',
    );
    const batch = JSON.parse(await client.waitFor((t) => t.includes('"y"'))) as RpcAnswer[];
    expect(batch).toHaveLength(2);
    expect(batch.find((a) => a.id === "x")?.error?.data?.code).toBe("RATE_LIMITED");
    expect(batch.find((a) => a.id === "y")?.error?.data?.code).toBe("METHOD_NOT_FOUND");
    expect(client.isOpen).toBe(true);
    await witness.stop();
  });

  it("ids are echoed exactly: null (viem's keep-alive), 9007199254740993 and a string, refused or answered", async () => {
    const gw = await gatewayWith({});
    const witness = await witnessOn(gw);
    const { client, upstream } = await open(urlOf(gw));

    client.send('{"jsonrpc":"2.0","id":null,"method":"net_version","params":[]}');
    const keepAlive = await client.waitFor((t) => rawIdOf(t) === "null");
    expect(JSON.parse(keepAlive)).toEqual({ jsonrpc: "2.0", id: null, result: "1" });

    client.send('{"jsonrpc":"2.0","id":9007199254740993,"method":"eth_chainId","params":[]}');
    const big = await client.waitFor((t) => rawIdOf(t) === "9007199254740993");
    expect(big).toContain('"result":"0x1"');

    client.send('{"jsonrpc":"2.0","id":"req-\\u00e9-1","method":"eth_blockNumber","params":[]}');
    const str = await client.answerTo('"req-\\u00e9-1"');
    expect(str).toEqual({ jsonrpc: "2.0", id: "req-é-1", result: "0x10" });

    client.send('{"jsonrpc":"2.0","id":9007199254740995,"method":"admin_peers","params":[]}');
    const refused = await client.waitFor((t) => rawIdOf(t) === "9007199254740995");
    expect(refused).toContain('"METHOD_NOT_FOUND"');

    // the node saw the ids as written too
    expect(upstream.messages.some((m) => m.includes('"id":9007199254740993'))).toBe(true);
    expect(upstream.methods()).toEqual(["net_version", "eth_chainId", "eth_blockNumber"]);
    expect(client.isOpen).toBe(true);
    await witness.stop();
  });

  it("a silent client is closed with 1000 after idleTimeoutMs; a talking one is not", async () => {
    const idle = 500;
    const gw = await gatewayWith({ idleTimeoutMs: idle });
    const witness = await witnessOn(gw);
    const started = Date.now();
    const { client, upstream } = await open(urlOf(gw));
    const since = witness.answers();
    const closed = await client.closed;
    expect(closed).toEqual({ code: 1000, reason: "idle timeout" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(idle - 50);
    await waitUntil(() => !upstream.isOpen, 3_000, "the upstream socket to close");
    // the witness, older than the idle timeout but never silent, is still answered
    expect(witness.answers()).toBeGreaterThan(since);
    await witnessAnswers(witness, witness.answers());
    await witness.stop();
  });

  it("the upstream dropping its socket moves the connection to a new one: the client stays open and is answered", async () => {
    const gw = await gatewayWith({});
    const witness = await witnessOn(gw);
    const dropped = await open(urlOf(gw));
    const closedByNode = await open(urlOf(gw));
    const since = witness.answers();
    const before = node.connections.length;
    dropped.upstream.socket.terminate();
    closedByNode.upstream.socket.close(1011, "node restarting");
    await waitUntil(() => node.connections.length === before + 2, 3_000, "two new upstream sockets");
    expect((await dropped.client.call("eth_chainId")).result).toBe("0x1");
    expect((await closedByNode.client.call("eth_chainId")).result).toBe("0x1");
    expect(dropped.client.isOpen && closedByNode.client.isOpen).toBe(true);
    await witnessAnswers(witness, since);
    await witness.stop();
  });

  it("a node that drops every socket at once: the connection moves three times in a minute, then closes with 1014", async () => {
    const gw = await gatewayWith({});
    const { client, upstream } = await open(urlOf(gw));
    let dropped = 0;
    let latest = upstream;
    while (client.isOpen && dropped < 10) {
      latest.socket.close(1011, "node restarting");
      dropped++;
      await waitUntil(() => node.latest() !== latest || !client.isOpen, 3_000, "a new socket or the close");
      latest = node.latest();
    }
    const closed = await client.closed;
    expect(closed.code).toBe(1014);
    expect(closed.reason).toMatch(/lost 3 times within a minute/);
    expect(dropped).toBe(4);
  });

  it("gateway.close() closes every client with 1001 and their upstream sockets with 1001", async () => {
    const gw = await gatewayWith({});
    const a = await open(urlOf(gw, KEYS.all));
    const b = await open(urlOf(gw, KEYS.dedicated));
    expect((await a.client.call("eth_chainId")).result).toBe("0x1");
    running.splice(running.indexOf(gw), 1);
    await gw.close();
    expect((await a.client.closed).code).toBe(1001);
    expect((await b.client.closed).code).toBe(1001);
    expect(await a.upstream.closed).toBe(1001);
    expect(await b.upstream.closed).toBe(1001);
  });
});
