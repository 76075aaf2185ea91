import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  evmNode,
  type LoopbackWsNode,
  startLoopbackWsNode,
  WsRpcError,
  waitUntil,
} from "../support/loopback-ws-node.js";
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
  });
});

// A read that may be answered ARCHIVE_REQUIRED is counted once answered; one that gets no answer is
// counted as any other read: a notification, and a read the gateway closed the connection under.
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

  it("one in flight when no node takes the connection is a read sent, not a write unconfirmed", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    const [sent, unconfirmed] = [await count(), await count("WRITE_NOT_CONFIRMED")];
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
    await eventually(async () => (await count()) === sent + 1, 2_000, "the read counted");
    expect(await count("WRITE_NOT_CONFIRMED")).toBe(unconfirmed);
  });
});
