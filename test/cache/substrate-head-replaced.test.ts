import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A Substrate node's best block replaced by a sibling: BABE lets two authors claim one slot (a primary and
// a secondary, or two primaries), and the node's longest-chain selection (sc-consensus-babe's fork choice:
// the chain with the most primary blocks) makes the other sibling its best block, with the same parent
// and number. The number does not move, so only the best block's hash says the head changed, and a header
// holds no hash of its own: chain_getBlockHash() answers the best block's hash, chain_getHeader(hash) that
// block's header (number as hex, parentHash), as sc-rpc's chain API answers them.

describe("Substrate: the best block replaced by a sibling", () => {
  const dot = endpointsByLabel.get("dot") as Endpoint;
  const H = 25_000_000;
  const state = nodeState(dot, H);
  let sibling = "a";
  const hashAt = (number: number, tail: string) =>
    `0x${number.toString(16).padStart(8, "0")}${tail.repeat(56)}`;
  const best = () => hashAt(H, sibling);
  const header = (number: number) => ({
    parentHash: hashAt(number - 1, "a"),
    number: `0x${number.toString(16)}`,
    stateRoot: `0x${"22".repeat(32)}`,
    extrinsicsRoot: `0x${"33".repeat(32)}`,
    digest: { logs: [] },
  });
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      firstOf(
        jsonRpcResponder({
          chain_getBlockHash: (params: unknown) => {
            const at = Array.isArray(params) ? params[0] : undefined;
            if (at === undefined || at === null) return best();
            // the genesis hash: the chain call
            if (at === 0) return state.chain;
            if (typeof at !== "number" || at > H) return null;
            return at === H ? best() : hashAt(at, "a");
          },
          chain_getHeader: (params: unknown) => {
            const at = Array.isArray(params) ? params[0] : undefined;
            if (at === undefined || at === null || at === best()) return header(H);
            if (typeof at !== "string" || !at.endsWith("a".repeat(56))) return null;
            const number = Number.parseInt(at.slice(2, 10), 16);
            return number < H ? header(number) : null;
          },
          chain_getFinalizedHead: () => hashAt(H - 2, "a"),
        }),
        softwareNode(dot, () => state),
      ),
    );
    gw = await startGateway({
      upstreams: { dot: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      // the operator's age: the head's answers live as long as the head does
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw, "dot", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("ends the answers read at the head", async () => {
    const read = async () => {
      const answer = await gw.call("dot", `/${KEYS.all}`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "chain_getBlockHash", params: [H] }),
      });
      return { hash: (answer.json as { result: string }).result, cache: answer.headers["x-cache"] };
    };
    expect((await read()).hash).toBe(hashAt(H, "a"));
    expect(await read()).toEqual({ hash: hashAt(H, "a"), cache: "hit" });
    sibling = "0";
    await eventually(async () => (await read()).hash === hashAt(H, "0"), 3_000, "the new best block's hash");
  });
});
