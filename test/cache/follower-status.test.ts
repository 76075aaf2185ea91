import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { callsWaiting } from "../../src/cache/relay-cached.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Bitcoin Core answers a call in its legacy JSON-RPC 1.0 mode (no "jsonrpc" member, or "1.0") that failed
// at HTTP 500 (httprpc.cpp JSONErrorReply: 400 for RPC_INVALID_REQUEST, 404 for RPC_METHOD_NOT_FOUND, else
// 500), and a batch at HTTP 200 with each call's error inside it (JSONRPCExecBatch); Bitcoin Core 28 keeps
// this for 1.0 calls (bitcoin/bitcoin#27101). The loopback node answers so (support/node-software.ts
// bitcoind28). An identical single call that waits on a batch's call in flight must get the status it
// would have got alone: the error's 500, not the batch's 200 (an SDK that reads the status, such as
// python-bitcoinrpc's or a curl -f script, takes a 200 for a success).

const H = 100;
/** A height past the tip: -8 "Block height out of range". */
const PAST = H + 50;

describe("an HTTP call that waits on a batch's identical call in flight", () => {
  let btc: Endpoint;
  let node: LoopbackNode;
  let gw: RunningGateway;
  let hold: Promise<void> | undefined;

  beforeAll(async () => {
    btc = endpointsByLabel.get("btc") as Endpoint;
    const serve = softwareNode(btc, nodeState(btc, H));
    node = await startLoopbackNode(async (request) => {
      if (hold !== undefined && request.body.includes(`[${PAST}]`)) await hold;
      return serve(request);
    });
    gw = await startGateway({
      upstreams: { btc: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "btc", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const cache = () => gw.gateway.upstreams.group("btc", "/")?.cache;
  const call = (id: number) => `{"jsonrpc":"1.0","id":${id},"method":"getblockhash","params":[${PAST}]}`;
  const post = (body: string) => gw.call("btc", `/${KEYS.all}`, { body });

  it("a lone 1.0 call past the tip is the node's 500", async () => {
    const alone = await post(call(1));
    expect(alone.status).toBe(500);
    expect((alone.json as { error: { code: number } }).error.code).toBe(-8);
  });

  it("gets that 500 too, not the batch's 200", async () => {
    let release = () => {};
    hold = new Promise((resolve) => {
      release = resolve;
    });
    const batch = post(`[${call(2)}]`);
    await eventually(
      () => node.requests.some((r) => r.body.includes('"id":2,')),
      4_000,
      "the batch at the node",
    );
    const single = post(call(3));
    await eventually(
      () =>
        callsWaiting(cache() as NonNullable<ReturnType<typeof cache>>) > 0 ||
        node.requests.some((r) => r.body.includes('"id":3,')),
      4_000,
      "the single call waiting or at the node",
    );
    release();
    hold = undefined;
    const [batchAnswer, singleAnswer] = await Promise.all([batch, single]);
    expect(batchAnswer.status).toBe(200);
    expect((batchAnswer.json as { error: { code: number } }[])[0]?.error.code).toBe(-8);
    expect(singleAnswer.status, JSON.stringify(singleAnswer.json)).toBe(500);
    expect((singleAnswer.json as { id: number; error: { code: number } }).id).toBe(3);
    expect((singleAnswer.json as { error: { code: number } }).error.code).toBe(-8);
  });
});
