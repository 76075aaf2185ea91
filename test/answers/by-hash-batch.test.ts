import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A Substrate state read by a hash one full node has not imported yet (UnknownBlock) is
// asked of the other full node, alone or inside a batch (docs/upstreams.md: "In a batch,
// the calls by hash so answered go on together").
const dot = endpointsByLabel.get("dot") as Endpoint;
const HASH = `0x${"ab".repeat(32)}`;
const known = (id: unknown) => ({ jsonrpc: "2.0", result: "0x01", id });
const unknown = (id: unknown) => ({
  jsonrpc: "2.0",
  error: { code: 4003, message: `Client error: UnknownBlock: Header was not found in the database: ${HASH}` },
  id,
});
function nodeOf(height: number, answer: (id: unknown) => unknown): Promise<LoopbackNode> {
  const byHash: Responder = (r) => {
    if (!r.body.includes(HASH)) return undefined;
    const parsed = JSON.parse(r.body);
    return { body: Array.isArray(parsed) ? parsed.map((c) => answer(c.id)) : answer(parsed.id) };
  };
  return startLoopbackNode(firstOf(byHash, softwareNode(dot, nodeState(dot, height))));
}
describe("dot state read by a fresh hash", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  beforeAll(async () => {
    nodes = await Promise.all([nodeOf(20_000_001, known), nodeOf(20_000_000, unknown)]);
    gw = await startGateway({
      upstreams: { dot: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });
  const call = (id: number) => ({ jsonrpc: "2.0", id, method: "state_getStorage", params: ["0x26aa", HASH] });
  it("alone and in a batch, finds the block on the other full node", async () => {
    const single: string[] = [];
    const batch: string[] = [];
    for (let i = 0; i < 6; i++) {
      const a = await gw.call("dot", `/${KEYS.noArchive}/`, { body: JSON.stringify(call(1)) });
      single.push(
        a.text.includes("UnknownBlock")
          ? "UnknownBlock"
          : a.text.includes("ARCHIVE_REQUIRED")
            ? "ARCHIVE_REQUIRED"
            : "ok",
      );
      const b = await gw.call("dot", `/${KEYS.noArchive}/`, { body: JSON.stringify([call(1), call(2)]) });
      batch.push(
        b.text.includes("UnknownBlock")
          ? "UnknownBlock"
          : b.text.includes("ARCHIVE_REQUIRED")
            ? "ARCHIVE_REQUIRED"
            : b.text.includes("0x01")
              ? "ok"
              : b.text.slice(0, 150),
      );
    }
    expect(single.every((o) => o === "ok")).toBe(true);
    expect(batch.every((o) => o === "ok")).toBe(true);
  });
});
