import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A connection moves when its node leaves rotation (docs/websocket.md): not only when the node fails, but
// when it answers and is out all the same (behind the others, cordoned by an operator), once no write of
// the connection waits for that node's answer. And a config a reload replaced keeps probing while its
// connections live on, so a node that fails under one of them is still left.

describe("a connection whose node leaves rotation", () => {
  let ws: LoopbackWsNode[];
  let http: LoopbackNode[];
  let gw: RunningGateway;
  let restore: () => void;
  /** Node a's HTTP side answers probes with a 500 while set: a node that fails, its sockets open. */
  let aFails = false;
  /** Node a holds each write until this is called. */
  let answerWrite: () => void = () => {};

  const config = (): Partial<GatewayConfig> => ({
    upstreams: {
      eth: ["a", "b"].map((name, i) => ({
        url: http[i]?.url as string,
        ws: ws[i]?.wsUrl as string,
        name,
        ...(name === "b" ? { tier: "fallback" as const } : {}),
      })),
    },
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 50 },
  });
  const member = (name: string) =>
    gw.gateway.upstreams.group("eth", "/")?.members.find((m) => m.name === name);
  const moved = () => gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" });

  beforeAll(async () => {
    restore = resolveTestHosts();
    const held = () =>
      new Promise((resolve) => {
        answerWrite = () => resolve(`0x${"12".repeat(32)}`);
      });
    ws = await Promise.all([
      startLoopbackWsNode(evmNode({ eth_sendRawTransaction: held })),
      startLoopbackWsNode(evmNode()),
    ]);
    const probes = { eth_blockNumber: "0x10", eth_chainId: "0x1" };
    http = await Promise.all([
      startLoopbackNode((request) =>
        aFails ? { status: 500, body: "" } : jsonRpcResponder(probes)(request),
      ),
      startLoopbackNode(jsonRpcResponder(probes)),
    ]);
    gw = await startGateway(config());
    await eventually(
      () => member("a")?.health.inRotation === true && member("b")?.health.inRotation === true,
      3_000,
      "both nodes in rotation",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...ws, ...http].map((node) => node?.close()));
    restore?.();
  });

  it("moves off a cordoned node once the write waiting on it is answered, with its subscription", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const id = (await client.call("eth_subscribe", ["newHeads"])).result;
    const before = await moved();
    client.send('{"jsonrpc":"2.0","id":"write","method":"eth_sendRawTransaction","params":["0x02f8"]}');
    await eventually(
      () => ws[0]?.methods().includes("eth_sendRawTransaction") === true,
      3_000,
      "the write at a",
    );
    const socketsOnB = ws[1]?.connections.length;
    member("a")?.health.cordon(true);
    // the write's answer would be lost with a's socket: the connection stays until it has it. The cordon
    // decides at once (a move would first open a socket on b), so nothing is waited for here.
    expect(member("a")?.health.state).toBe("cordoned");
    expect(ws[1]?.connections.length).toBe(socketsOnB);
    expect(await moved()).toBe(before);
    answerWrite();
    expect((await client.answerTo('"write"')).result).toBe(`0x${"12".repeat(32)}`);
    await eventually(async () => (await moved()) === before + 1, 3_000, "the connection on b");
    // moved once it attached; its subscription is made again right after
    await eventually(() => ws[1]?.latest().subscriptions.size === 1, 3_000, "resubscribed on b");
    const [onB] = [...(ws[1]?.latest().subscriptions.values() ?? [])];
    const from = client.received.length;
    onB?.notify({ number: "0x11", parentHash: `0x${"44".repeat(32)}` });
    const pushed = JSON.parse(await client.waitFor((t) => t.includes("eth_subscription"), 3_000, from));
    expect(pushed.params.subscription).toBe(id);
    // the write reached a node once
    expect(
      [...(ws[0]?.methods() ?? []), ...(ws[1]?.methods() ?? [])].filter(
        (m) => m === "eth_sendRawTransaction",
      ),
    ).toHaveLength(1);
    client.close();
    member("a")?.health.cordon(false);
    await eventually(() => member("a")?.health.inRotation === true, 3_000, "a back in rotation");
  });

  it("leaves the fallback once the primary is back in rotation", async () => {
    member("a")?.health.cordon(true);
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const id = (await client.call("eth_subscribe", ["newHeads"])).result;
      expect(ws[1]?.latest().isOpen).toBe(true);
      const before = await moved();
      member("a")?.health.cordon(false);
      await eventually(async () => (await moved()) === before + 1, 5_000, "the connection back on a");
      await eventually(
        () => ws[0]?.latest().methods().includes("eth_subscribe") === true,
        3_000,
        "resubscribed on a",
      );
      const [onA] = [...(ws[0]?.latest().subscriptions.values() ?? [])];
      const from = client.received.length;
      onA?.notify({ number: "0x12", parentHash: `0x${"44".repeat(32)}` });
      const pushed = JSON.parse(await client.waitFor((t) => t.includes("eth_subscription"), 3_000, from));
      expect(pushed.params.subscription).toBe(id);
    } finally {
      client.close();
    }
  });

  it("after a reload, a connection opened before it moves off a node that fails", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    await client.call("eth_subscribe", ["newHeads"]);
    expect(ws[0]?.latest().isOpen).toBe(true);
    const before = await moved();
    gw.gateway.reload({ ...gw.config, ...config() } as GatewayConfig, gw.keys);
    aFails = true;
    try {
      await eventually(async () => (await moved()) === before + 1, 5_000, "the connection moved to b");
      // moved once it attached; its subscription is made again right after
      await eventually(
        () => ws[1]?.latest().methods().includes("eth_subscribe") === true,
        3_000,
        "resubscribed on b",
      );
      expect(client.isOpen).toBe(true);
    } finally {
      aFails = false;
      client.close();
    }
  });
  it("a reload that takes its node out of the deployment (renamed here) moves a connection opened before it", async () => {
    await eventually(() => member("a")?.health.inRotation === true, 3_000, "a back in rotation");
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    await client.call("eth_subscribe", ["newHeads"]);
    expect(ws[0]?.latest().isOpen).toBe(true);
    const before = await moved();
    const renamed = config();
    const [a, b] = (renamed.upstreams?.eth ?? []) as { url: string; ws: string; name: string }[];
    try {
      gw.gateway.reload(
        { ...gw.config, ...renamed, upstreams: { eth: [{ ...a, name: "a2" }, b] } } as GatewayConfig,
        gw.keys,
      );
      await eventually(async () => (await moved()) === before + 1, 5_000, "the connection moved to b");
      expect(client.isOpen).toBe(true);
      // an operator's uncordon does not bring back a node the deployment took out
      expect(gw.gateway.cordon({ label: "eth", upstream: "a", cordoned: false })).toBe(0);
      // a reload back to its name does: the connection returns to the primary
      gw.gateway.reload({ ...gw.config, ...config() } as GatewayConfig, gw.keys);
      await eventually(async () => (await moved()) === before + 2, 5_000, "the connection back on a");
      expect(client.isOpen).toBe(true);
    } finally {
      client.close();
      gw.gateway.reload({ ...gw.config, ...config() } as GatewayConfig, gw.keys);
    }
  });

  it("after a reload, the operator's cordon moves a connection opened before it too", async () => {
    await eventually(() => member("a")?.health.inRotation === true, 3_000, "a back in rotation");
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    await client.call("eth_subscribe", ["newHeads"]);
    const before = await moved();
    gw.gateway.reload({ ...gw.config, ...config() } as GatewayConfig, gw.keys);
    try {
      expect(gw.gateway.cordon({ label: "eth", upstream: "a", cordoned: true })).toBe(1);
      await eventually(async () => (await moved()) === before + 1, 5_000, "the connection moved to b");
      expect(client.isOpen).toBe(true);
    } finally {
      gw.gateway.cordon({ label: "eth", upstream: "a", cordoned: false });
      client.close();
    }
  });
});

// A probe round judges a label's nodes one after another: connections that leave a node judged lagging
// may move to one judged lagging just after, and nothing else would move them on; and a node that left
// rotation while none other was in is left once one comes back.
describe("connections on nodes out of rotation, however they got there", () => {
  const names = ["a", "b", "c"];
  const heads: Record<string, number> = { a: 0x10, b: 0x10, c: 0x10 };
  let ws: LoopbackWsNode[];
  let http: LoopbackNode[];
  let gw: RunningGateway;
  let restore: () => void;
  const member = (name: string) =>
    gw.gateway.upstreams.group("eth", "/")?.members.find((m) => m.name === name);
  const openOn = () => ws.map((node) => node.connections.filter((c) => c.isOpen).length);

  beforeAll(async () => {
    restore = resolveTestHosts();
    ws = await Promise.all(names.map(() => startLoopbackWsNode(evmNode())));
    http = await Promise.all(
      names.map((name) =>
        startLoopbackNode((request) =>
          jsonRpcResponder({
            eth_blockNumber: () => `0x${(heads[name] as number).toString(16)}`,
            eth_chainId: "0x1",
          })(request),
        ),
      ),
    );
    gw = await startGateway({
      upstreams: {
        eth: names.map((name, i) => ({ url: http[i]?.url as string, ws: ws[i]?.wsUrl as string, name })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 50 },
    });
    await eventually(
      () => names.every((name) => member(name)?.health.inRotation === true),
      3_000,
      "all in rotation",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...ws, ...http].map((node) => node?.close()));
    restore?.();
  });

  it("end on the node in rotation when two lag in one probe round", async () => {
    for (const name of ["b", "c"]) member(name)?.health.cordon(true);
    const clients = await Promise.all(
      Array.from({ length: 4 }, () => Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`)),
    );
    for (const client of clients) await client.call("eth_subscribe", ["newHeads"]);
    for (const name of ["b", "c"]) member(name)?.health.cordon(false);
    await eventually(
      () => names.every((name) => member(name)?.health.inRotation === true),
      3_000,
      "all in rotation",
    );
    expect(openOn()).toEqual([4, 0, 0]);
    // c goes 50 blocks ahead: a and b lag, judged one after the other in the same round
    heads.c = 0x10 + 50;
    try {
      await eventually(() => openOn().join() === "0,0,4", 3_000, "every connection on c");
      expect(clients.every((client) => client.isOpen)).toBe(true);
    } finally {
      heads.c = 0x10;
      for (const client of clients) client.close();
    }
  });
});
