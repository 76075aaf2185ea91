import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BinaryFolder,
  binaryInEmptyFolder,
  type RunningBinary,
  startBinary,
  stopBinary,
  writeDeployment,
} from "../support/binary.js";
import { eventually } from "../support/eventually.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// SIGTERM during calls and open WebSockets: no call is cut, the sockets get 1001, and it exits 0.

const KEY = "FNdrain00000000000000000000000001";

describe("SIGTERM drains", () => {
  let folder: BinaryFolder;
  let slow: LoopbackNode;
  let ws: LoopbackWsNode;
  let gateway: RunningBinary;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    folder = await binaryInEmptyFolder();
    // Each call takes 600 ms at the node: in flight when the signal arrives.
    slow = await startLoopbackNode(async (seen) => {
      await new Promise((resolve) => setTimeout(resolve, 600));
      const { id } = JSON.parse(seen.body) as { id: number };
      return { body: { jsonrpc: "2.0", id, result: "0x10" } };
    });
    ws = await startLoopbackWsNode(evmNode());
    const config = writeDeployment(
      join(folder.dir, "deployment.yaml"),
      `{ url: "${slow.url}", ws: "${ws.wsUrl}" }`,
      KEY,
    );
    gateway = await startBinary(folder, ["--config", config]);
  }, 120_000);
  afterAll(async () => {
    restore?.();
    await stopBinary(gateway);
    await Promise.all([slow?.close(), ws?.close()]);
    folder?.remove();
  });

  it("finishes every call in flight, closes WebSockets with 1001, and exits 0", async () => {
    const sockets = await Promise.all(
      [1, 2, 3].map(() => Client.open(`ws://eth.gw.test:${gateway.port}/${KEY}`)),
    );
    const calls = Array.from({ length: 10 }, (_, id) =>
      request(`http://127.0.0.1:${gateway.port}/${KEY}/`, {
        method: "POST",
        headers: { host: "eth.gw.test", "content-type": "application/json" },
        // a call the answer cache never keeps, so each of the ten reaches the node rather than sharing one
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "eth_gasPrice", params: [] }),
      }).then(async (r) => ({
        status: r.statusCode,
        body: (await r.body.json()) as { id: number; result: string },
      })),
    );
    // every call is at the node, which holds each for 600 ms: all ten in flight when the signal arrives
    await eventually(() => slow.requests.length === 10, 5_000, "the ten calls at the node");
    gateway.child.kill("SIGTERM");
    const answers = await Promise.all(calls);
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.map((a) => a.body.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const closed = await Promise.all(sockets.map((s) => s.closed));
    expect(closed.map((c) => c.code)).toEqual([1001, 1001, 1001]);
    expect(await gateway.exited).toBe(0);
    expect(gateway.logs.some((l) => l.includes('"msg":"shutting down"'))).toBe(true);
  }, 30_000);
});
