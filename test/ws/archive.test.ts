import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type ArchivePair, startArchivePair } from "../support/archive-pair.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import {
  evmNode,
  type LoopbackWsNode,
  startLoopbackWsNode,
  WsRpcError,
  waitUntil,
} from "../support/loopback-ws-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A connection's calls never go to archive nodes: a full node's "no such state" answer to a read older than
// it keeps (geth's "missing trie node") is ARCHIVE_REQUIRED by its id, naming the archive label, as an HTTP
// caller whose read no archive node may take is told (docs/upstreams.md, "Archive"). It reached the caller
// as the node's raw error.

describe("a read older than the connection's full node keeps", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({
        eth_getBalance: (params: unknown) => {
          if ((params as string[])[1] === "0x10")
            throw new WsRpcError(-32000, "missing trie node 1f2e3d (path )");
          return "0x2a";
        },
      }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("is ARCHIVE_REQUIRED by its id, alone or in a batch beside a call the node answered", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    const address = `0x${"ab".repeat(20)}`;
    const units = () => gw.metric("gateway_compute_units_total", { label: "eth" });
    const refusals = () =>
      gw.metric("gateway_requests_total", {
        label: "eth",
        method: "eth_getBalance",
        code: "ARCHIVE_REQUIRED",
      });
    const [unitsBefore, refusalsBefore] = [await units(), await refusals()];
    const old = await client.call("eth_getBalance", [address, "0x10"]);
    expect(old.error).toMatchObject({
      code: -32045,
      data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" },
    });
    // refused by the gateway, as over HTTP: it cost nothing, and counts as its error
    await eventually(async () => (await refusals()) === refusalsBefore + 1, 2_000, "the refusal counted");
    expect(await units()).toBe(unitsBefore);
    client.ws.send(
      JSON.stringify([
        { jsonrpc: "2.0", id: "old", method: "eth_getBalance", params: [address, "0x10"] },
        { jsonrpc: "2.0", id: "new", method: "eth_getBalance", params: [address, "latest"] },
      ]),
    );
    const batch = JSON.parse(await client.waitFor((text) => text.includes('"old"'))) as {
      id: string;
      result?: string;
      error?: { data: { code: string } };
    }[];
    expect(batch.find((a) => a.id === "old")?.error?.data.code).toBe("ARCHIVE_REQUIRED");
    expect(batch.find((a) => a.id === "new")?.result).toBe("0x2a");
    // the batch's call the node answered costs its 20 units, the refused one nothing
    await eventually(async () => (await units()) === unitsBefore + 20, 2_000, "the batch counted");
    client.close();
    // a key with archive access, where the archive label has no upstream: NO_UPSTREAM, as over HTTP
    const archiveKey = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const unitsNow = await units();
    expect((await archiveKey.call("eth_getBalance", [address, "0x10"])).error).toMatchObject({
      data: { code: "NO_UPSTREAM", reason: expect.stringContaining("eth-archive has no upstream") },
    });
    // and costs nothing, as over HTTP
    await eventually(
      // the batch above is counted as a batch: this is the second single refusal
      async () => (await refusals()) === refusalsBefore + 2,
      2_000,
      "the archive key's call counted",
    );
    expect(await units()).toBe(unitsNow);
    archiveKey.close();
  });
});

// A read is counted once answered; a notification, which gets no answer, when sent; and a read the gateway
// closed the connection under, which no node served, as NO_UPSTREAM: it costs nothing, as over HTTP.
describe("a read of state over a WebSocket that gets no answer", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const address = `0x${"ab".repeat(20)}`;
  const count = (code?: string) =>
    gw.metric("gateway_requests_total", {
      label: "eth",
      method: "eth_getBalance",
      ...(code === undefined ? { result: "ok" } : { code }),
    });

  beforeAll(async () => {
    restore = resolveTestHosts();
    // a balance at block 0x1 is never answered
    node = await startLoopbackWsNode(
      evmNode({
        eth_getBalance: (params: unknown) =>
          (params as string[])[1] === "0x1" ? new Promise(() => {}) : "0x2a",
      }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("a notification is counted when sent", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    const before = await count();
    client.ws.send(JSON.stringify({ jsonrpc: "2.0", method: "eth_getBalance", params: [address, "latest"] }));
    await eventually(async () => (await count()) === before + 1, 2_000, "the notification counted");
    client.close();
  });

  it("one in flight when no node takes the connection is a read no node served, not a write unconfirmed", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    const [unserved, unconfirmed] = [await count("NO_UPSTREAM"), await count("WRITE_NOT_CONFIRMED")];
    client.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [address, "0x1"] }),
    );
    await waitUntil(
      () => node.connections.some((c) => c.methods().includes("eth_getBalance")),
      2_000,
      "sent",
    );
    // the node goes, and no other takes the connection: closed with 1014
    await node.close();
    expect((await client.closed).code).toBe(1014);
    await eventually(async () => (await count("NO_UPSTREAM")) === unserved + 1, 2_000, "the read counted");
    expect(await count("WRITE_NOT_CONFIRMED")).toBe(unconfirmed);
  });
});

// A key that may reach archive nodes gets such a read from them over a WebSocket too, as over HTTP: the
// label's archive nodes answer it in the full node's place, by its id, at the archive's price. It was
// ARCHIVE_REQUIRED, telling a key that had archive access to get one (an ethers WebSocketProvider caller).
describe("a read older than the connection's full node keeps, for a key with archive access", () => {
  let full: LoopbackWsNode;
  let archive: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  const address = `0x${"ab".repeat(20)}`;

  beforeAll(async () => {
    restore = resolveTestHosts();
    full = await startLoopbackWsNode(
      evmNode({
        eth_getBalance: (params: unknown) => {
          if (["0x10", "0x11"].includes((params as string[])[1] as string))
            throw new WsRpcError(-32000, "missing trie node 1f2e3d (path )");
          return "0x2a";
        },
      }),
    );
    // an archive node that has the state, but for block 0x11, which it was never given
    archive = await startLoopbackNode(async (request) => {
      const call = JSON.parse(request.body) as { id: unknown; params: string[] };
      return call.params[1] === "0x11"
        ? {
            body: {
              jsonrpc: "2.0",
              id: call.id,
              error: { code: -32000, message: "missing trie node 0a0b (path )" },
            },
          }
        : { body: { jsonrpc: "2.0", id: call.id, result: "0x99" } };
    });
    gw = await startGateway({ upstreams: { eth: [full.url], "eth-archive": [archive.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([full?.close(), archive?.close()]);
    restore?.();
  });

  it("is answered by the archive nodes, alone or in a batch, at the archive's price", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const units = () => gw.metric("gateway_compute_units_total", { label: "eth" });
    const before = await units();
    expect(await client.call("eth_getBalance", [address, "0x10"])).toMatchObject({ result: "0x99" });
    expect(archive.requests.map((r) => JSON.parse(r.body).params)).toEqual([[address, "0x10"]]);
    // eth_getBalance's 20 units, twice over as the archive's
    await eventually(async () => (await units()) === before + 40, 2_000, "the read counted");
    client.ws.send(
      JSON.stringify([
        { jsonrpc: "2.0", id: "old", method: "eth_getBalance", params: [address, "0x10"] },
        { jsonrpc: "2.0", id: "new", method: "eth_getBalance", params: [address, "latest"] },
      ]),
    );
    const batch = JSON.parse(await client.waitFor((text) => text.includes('"old"'))) as {
      id: string;
      result?: string;
    }[];
    expect(batch.find((a) => a.id === "old")?.result).toBe("0x99");
    expect(batch.find((a) => a.id === "new")?.result).toBe("0x2a");
    await eventually(async () => (await units()) === before + 100, 2_000, "the batch counted");
    // a key without archive access is still told so, and the archive nodes are not asked
    const other = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    expect((await other.call("eth_getBalance", [address, "0x10"])).error).toMatchObject({
      data: { code: "ARCHIVE_REQUIRED" },
    });
    expect(archive.requests).toHaveLength(2);
    // the archive node's own "no such state" is its answer to a key that reached it, as over HTTP: not a
    // refusal telling that key to get archive access
    expect((await client.call("eth_getBalance", [address, "0x11"])).error).toMatchObject({
      code: -32000,
      message: expect.stringContaining("missing trie node"),
    });
    client.close();
    other.close();
  });
});

// The same on real anvils with the answer cache on: a pruned full node, and an archive node with the same
// 300 blocks. What the archive answered a connection is kept by no cache: a key without archive access,
// over HTTP or a WebSocket, is still refused.
describe("archive reads over a WebSocket, with the cache on (real anvil)", () => {
  const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
  let pair: ArchivePair;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    pair = await startArchivePair(300);
    gw = await startGateway({
      upstreams: { eth: [pair.full.url], "eth-archive": [pair.archive.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await pair?.stop();
    restore?.();
  });

  it("a block the full node refuses as missing comes from the archive node, and reaches no other key", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const balance = await client.call("eth_getBalance", [ACCOUNT, "0x12b"]);
    expect(balance.result).toBe("0x21e19e0c9bab2400000");
    client.close();
    const http = await gw.call("eth", `/${KEYS.noArchive}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [ACCOUNT, "0x12b"] }),
    });
    expect(http.status).toBe(403);
    expect(http.text).toContain("ARCHIVE_REQUIRED");
    const other = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    expect((await other.call("eth_getBalance", [ACCOUNT, "0x12b"])).error).toMatchObject({
      data: { code: "ARCHIVE_REQUIRED" },
    });
    other.close();
  });
});

// As over HTTP, a read older than a full node keeps (registry `reads.archive.fullHistory` below the served
// head) by a key without archive access is ARCHIVE_REQUIRED at once, alone or in a batch: the node is never
// asked, whose answer could be its own pruned-state error, or worse.
describe("a read far older than a full node keeps, by a key without archive access", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const asked: string[] = [];

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(
      evmNode({
        eth_blockNumber: "0x100000",
        eth_getBalance: (params: unknown) => {
          asked.push((params as string[])[1] as string);
          return "0x2a";
        },
      }),
    );
    gw = await startGateway({ upstreams: { eth: [node.url] }, health: { ...DEFAULT_HEALTH } });
    await everyNodeInRotation(gw);
    await eventually(
      async () => {
        const head = await gw.call("eth", `/${KEYS.noArchive}`, {
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
        });
        return (head.json as { result?: string }).result === "0x100000";
      },
      4_000,
      "the head served",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("is refused without reaching the node; the batch's other calls are answered", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    try {
      const address = `0x${"ab".repeat(20)}`;
      const old = await client.call("eth_getBalance", [address, "0x5"]);
      expect(old.error).toMatchObject({
        code: -32045,
        data: { code: "ARCHIVE_REQUIRED", archiveLabel: "eth-archive" },
      });
      client.send(
        JSON.stringify([
          { jsonrpc: "2.0", id: "old", method: "eth_getBalance", params: [address, "0x6"] },
          { jsonrpc: "2.0", id: "new", method: "eth_getBalance", params: [address, "latest"] },
        ]),
      );
      const batch = JSON.parse(await client.waitFor((text) => text.includes('"old"'))) as {
        id: string;
        result?: string;
        error?: { data: { code: string } };
      }[];
      expect(batch.find((a) => a.id === "old")?.error?.data.code).toBe("ARCHIVE_REQUIRED");
      expect(batch.find((a) => a.id === "new")?.result).toBe("0x2a");
      expect(asked).toEqual(["latest"]);
    } finally {
      client.close();
    }
  });
});
