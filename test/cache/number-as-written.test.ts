import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { callsWaiting } from "../../src/cache/relay-cached.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { HEIGHT, NEAR_KEPT_BLOCKS, nearBlockReads } from "../support/sdk-nodes.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A height written `7654311.0` reads here as 7654311, but not to nearcore: its BlockId is an untagged
// enum of a u64 height or a CryptoHash (core/primitives types.rs), and serde_json (with arbitrary_precision,
// as nearcore builds it) gives no u64 for a number written with a fraction, so RpcBlockRequest::parse fails
// and the node answers a REQUEST_VALIDATION_ERROR / PARSE_ERROR at HTTP 400 (chain/jsonrpc-primitives
// errors.rs RpcParseError, chain/jsonrpc lib.rs rpc_handler). The gateway sends params as the caller wrote
// them (jsonrpc/check.ts PassedCall.json), so the two are two calls: neither is answered with the other's.

const FINAL = HEIGHT - 10;

/** nearcore's refusal of `block` params it cannot read (RpcParseError, through RpcError::parse_error). */
const PARSE_REFUSAL = (id: unknown) => ({
  status: 400,
  body: {
    jsonrpc: "2.0",
    error: {
      name: "REQUEST_VALIDATION_ERROR",
      cause: {
        name: "PARSE_ERROR",
        info: {
          error_message: "Failed parsing args: data did not match any variant of untagged enum BlockId",
        },
      },
      code: -32700,
      message: "Parse error",
      data: "Failed parsing args: data did not match any variant of untagged enum BlockId",
    },
    id,
  },
});

describe("a number written otherwise than its value reads", () => {
  let near: Endpoint;
  let node: LoopbackNode;
  let gw: RunningGateway;
  /** While set, the node holds its answers to `block` at a block id until it resolves. */
  let hold: Promise<void> | undefined;

  beforeAll(async () => {
    near = endpointsByLabel.get("near") as Endpoint;
    const serve = softwareNode(near, nodeState(near, HEIGHT), [""], {
      answers: nearBlockReads(NEAR_KEPT_BLOCKS),
    });
    node = await startLoopbackNode(async (request) => {
      if (hold !== undefined && request.body.includes('"block_id"')) await hold;
      // a height with a fraction: no u64 to nearcore
      if (/"block_id":-?\d+[.eE]/.test(request.body))
        return PARSE_REFUSAL((JSON.parse(request.body) as { id: unknown }).id);
      return serve(request);
    });
    gw = await startGateway({
      upstreams: { near: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "near", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const cache = () => gw.gateway.upstreams.group("near", "/")?.cache;
  /** `block` at `height`, its params' text as given. */
  const send = async (id: number, height: string) => {
    const answer = await gw.call("near", `/${KEYS.all}`, {
      body: `{"jsonrpc":"2.0","id":${id},"method":"block","params":{"block_id":${height}}}`,
      headers: { "content-type": "application/json" },
    });
    return { status: answer.status, json: answer.json as Record<string, unknown> };
  };
  const askedFor = (id: number) =>
    node.requests.filter((r) => r.body.includes('"block_id"') && r.body.includes(`"id":${id},`)).length;

  it("a plain height asked while the other is in flight gets its block, not the other's refusal", async () => {
    let release = () => {};
    hold = new Promise((resolve) => {
      release = resolve;
    });
    const odd = send(1, `${FINAL}.0`);
    await eventually(() => askedFor(1) === 1, 4_000, "the height with a fraction at the node");
    const plain = send(2, String(FINAL));
    // the plain call waits on the other, or is at the node itself
    await eventually(
      () => askedFor(2) === 1 || callsWaiting(cache() as NonNullable<ReturnType<typeof cache>>) > 0,
      4_000,
      "the plain call waiting or at the node",
    );
    release();
    hold = undefined;
    const [oddAnswer, plainAnswer] = await Promise.all([odd, plain]);
    expect(oddAnswer.status).toBe(400);
    expect(plainAnswer.status, JSON.stringify(plainAnswer.json)).toBe(200);
    expect(plainAnswer.json.id).toBe(2);
    expect((plainAnswer.json.result as { header: { height: number } }).header.height).toBe(FINAL);
  });

  it("nor is the other answered from the cache with the plain height's block", async () => {
    // the plain height's block is final and kept: the same call again is a hit
    await send(3, String(FINAL));
    expect(askedFor(4)).toBe(0);
    const again = await gw.call("near", `/${KEYS.all}`, {
      body: `{"jsonrpc":"2.0","id":4,"method":"block","params":{"block_id":${FINAL}}}`,
      headers: { "content-type": "application/json" },
    });
    expect(again.headers["x-cache"]).toBe("hit");
    // written 7654311.0 or 7.654311e6, the node's to read: its refusal
    for (const [id, height] of [
      [5, `${FINAL}.0`],
      [6, "7.654311e6"],
    ] as const) {
      const odd = await send(id, height);
      expect(odd.status, JSON.stringify(odd.json)).toBe(400);
      expect(askedFor(id)).toBe(1);
    }
  });
});
