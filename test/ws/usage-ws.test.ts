import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallDetail } from "../../src/keys/usage-detail.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode, waitUntil } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A key's usage of a WebSocket batch (docs/plans.md, "Usage and the dashboard"): a call refused as it was
// about to go (its id already waiting, a full connection) is a refused call under its code, as one
// refused at the check is; the batch's other calls are served, and counted under their methods.

describe("a WebSocket batch with a call refused as it was about to go", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const records: { calls: number; errors: number; units: number; detail: CallDetail | undefined }[] = [];

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode({ eth_blockNumber: "0x10" }));
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      usage: {
        record: (_key, _label, calls, errors, units, detail) =>
          records.push({ calls, errors, units, detail }),
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("counts the refused call under its code and the served one under its method, at the served one's price", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    // one id twice: the second is refused, as its id is already waiting on the connection
    client.send(
      JSON.stringify([
        { jsonrpc: "2.0", id: 7, method: "eth_chainId", params: [] },
        { jsonrpc: "2.0", id: 7, method: "eth_blockNumber", params: [] },
      ]),
    );
    const answer = JSON.parse(await client.waitFor((text) => text.startsWith("["))) as { error?: unknown }[];
    expect(answer.filter((a) => a.error !== undefined)).toHaveLength(1);
    const [record] = records;
    // eth_chainId costs 5 (docs/compute-units.md)
    expect(record).toMatchObject({ calls: 2, errors: 1, units: 5 });
    expect(record?.detail?.refusedCodes).toEqual(["INVALID_REQUEST"]);
    expect(record?.detail?.parts?.map((part) => [part.method, part.calls])).toEqual([["eth_chainId", 1]]);
    client.close();
  });
});

// A message holding a write is counted once it is answered (docs/websocket.md): one whose caller leaves
// first counts as client_closed and costs nothing; a batch with a write and a read whose node is lost
// counts once, when the read sent again is answered.
describe("a WebSocket write's message, counted once it ends", () => {
  let a: LoopbackWsNode;
  let b: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const records: { calls: number; errors: number; units: number }[] = [];
  const never = () => new Promise(() => {});

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startLoopbackWsNode(evmNode({ eth_sendRawTransaction: never, eth_getBalance: never }));
    b = await startLoopbackWsNode(evmNode({ eth_getBalance: "0x2a" }));
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
      usage: { record: (_key, _label, calls, errors, units) => records.push({ calls, errors, units }) },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
    restore?.();
  });

  const write = (id: string) => ({
    jsonrpc: "2.0",
    id,
    method: "eth_sendRawTransaction",
    params: ["0x02f8"],
  });

  it("a write whose caller leaves before its answer is client_closed, and costs nothing", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    client.send(JSON.stringify(write("w")));
    await waitUntil(() => a.methods().includes("eth_sendRawTransaction"), 3_000, "the write at a");
    client.close();
    await waitUntil(() => records.length === 1, 3_000, "the message counted");
    expect(records[0]).toMatchObject({ calls: 1, errors: 0, units: 0 });
    expect(
      await gw.metric("gateway_requests_total", { method: "eth_sendRawTransaction", code: "CLIENT_CLOSED" }),
    ).toBe(1);
  });

  it("a batch of a write and a read whose node is lost counts once, when the read is answered again", async () => {
    records.length = 0;
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    client.send(
      JSON.stringify([
        write("w2"),
        { jsonrpc: "2.0", id: "r", method: "eth_getBalance", params: [`0x${"aa".repeat(20)}`, "latest"] },
      ]),
    );
    await waitUntil(() => a.methods().filter((m) => m === "eth_getBalance").length === 1, 3_000, "both at a");
    await a.close();
    const answer = JSON.parse(await client.waitFor((text) => text.startsWith("["))) as { id: string }[];
    expect(answer.map((call) => call.id).sort()).toEqual(["r", "w2"]);
    await waitUntil(() => records.length === 1, 3_000, "the batch counted");
    // the write a move could not confirm costs nothing and is an error; the read costs its 20
    expect(records[0]).toMatchObject({ calls: 2, errors: 1, units: 20 });
    expect(
      gw.logs.filter((line) => line.includes('"websocket message"') && line.includes("WRITE_NOT_CONFIRMED")),
    ).toHaveLength(1);
    expect(await gw.metric("gateway_requests_total", { method: "batch" })).toBe(1);
    client.close();
  });
});
