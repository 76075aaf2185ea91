import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A new WebSocket connection keeps the node it opens on (docs/upstreams.md, "Answers across nodes"): it
// must open on one that has reached the head the label served, or the first head it reads is behind one
// the caller read over HTTP a moment before. Stellar RPC's WebSocket is bridged over HTTP to one node; a
// node one ledger ahead and one behind.
const HEAD = 5_000_000;

describe("a new WebSocket connection opens on a node at the served head (xlm, bridged over HTTP)", () => {
  const xlm = endpointsByLabel.get("xlm");
  if (xlm === undefined) throw new Error("no xlm in the registry");
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    nodes = await Promise.all(
      [HEAD + 1, HEAD].map((h) => startLoopbackNode(softwareNode(xlm, nodeState(xlm, h)))),
    );
    gw = await startGateway({
      upstreams: { xlm: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "xlm");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes?.map((node) => node.close()) ?? []);
    restore?.();
  });

  it("never reads a ledger below the one HTTP served, on any of ten fresh connections", async () => {
    const http = await gw.call("xlm", `/${KEYS.all}`, { body: rpcBody("getLatestLedger", {}) });
    const served = (http.json as { result: { sequence: number } }).result.sequence;
    expect(served).toBe(HEAD + 1);
    const seen: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const client = await Client.open(`ws://xlm.${DOMAIN}:${gw.port}/${KEYS.all}`);
      const answer = await client.call("getLatestLedger", {} as unknown as unknown[]);
      seen.push((answer.result as { sequence?: number } | undefined)?.sequence);
      client.close();
    }
    expect(seen).toEqual(Array(10).fill(HEAD + 1));
  });
});

/** A loopback port nothing listens on: a node whose WebSocket port is closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("a new WebSocket connection whose node at the head does not open its socket (eth)", () => {
  let ahead: FaultyNode;
  let behind: FaultyNode;
  let behindWs: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    ahead = await startFaultyNode(() => jsonRpcResponder({ eth_blockNumber: "0x11", eth_chainId: "0x1" }));
    behind = await startFaultyNode(() => jsonRpcResponder({ eth_blockNumber: "0x10", eth_chainId: "0x1" }));
    behindWs = await startLoopbackWsNode({ results: { eth_blockNumber: "0x10" } });
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: ahead.url, ws: `ws://127.0.0.1:${await closedPort()}`, name: "ahead" },
          { url: behind.url, ws: behindWs.wsUrl, name: "behind" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "eth");
    await eventually(() => gw.gateway.upstreams.group("eth", "/")?.served.height === 0x11, 3_000, "head");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([ahead?.close(), behind?.close(), behindWs?.close()]);
    restore?.();
  });

  it("opens on the next node rather than failing", async () => {
    for (let i = 0; i < 3; i++) {
      const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
      expect((await client.call("eth_blockNumber")).result).toBe("0x10");
      client.close();
    }
  });
});
