import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";

// An operator's proxy running for weeks: every key revoked, expired (a free test's end, a rotated key's
// grace) or whose settings changed is told to closeConnectionsOf (proxy/run.ts onWithdrawn), which calls
// WebSocketGateway.closeKey on every served config. closeKey records the withdrawal for the key's upgrades
// still opening (src/ws/upgrade.ts): the record held every key ever withdrawn, whether or not it ever opened
// a WebSocket, for as long as the config served (about 70 bytes a key; 200,000 keys held 13.7 MB).

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
function heapMb(): number {
  for (let i = 0; i < 4; i += 1) gc();
  return process.memoryUsage().heapUsed / 1e6;
}

const WITHDRAWN = 200_000;

describe("key withdrawals over weeks", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackWsNode(evmNode({}));
    gw = await startGateway({
      upstreams: {
        eth: [{ url: `http://127.0.0.1:${node.port}`, ws: `ws://127.0.0.1:${node.port}`, name: "n" }],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("one key withdrawn again and again costs nothing", () => {
    const before = heapMb();
    for (let i = 0; i < WITHDRAWN; i += 1)
      gw.gateway.closeConnectionsOf("FNsameKeyWithdrawn000000000000".slice(0, 12));
    const after = heapMb();
    expect(after - before).toBeLessThan(3);
  });

  it("keys withdrawn that never opened a connection leave nothing behind once withdrawn", () => {
    const before = heapMb();
    // key prefixes as the account store's grants carry them (keys withdrawn over weeks: revoked, expired)
    for (let i = 0; i < WITHDRAWN; i += 1)
      gw.gateway.closeConnectionsOf(`FN${i.toString(36).padStart(10, "0")}`);
    const after = heapMb();
    expect(after - before).toBeLessThan(3);
  });
});
