import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  answeringAfter,
  firstOf,
  jsonRpcResponder,
  type LoopbackNode,
  startLoopbackNode,
} from "../support/loopback-node.js";

// A node on another chain (BNB Smart Chain, 0x38) behind `eth`, whose answer to the chain call comes after
// the probe's timeout (an overloaded node): the prober's first chain check fails, and the node goes from
// `checking` to `failing` without its chain known. A failing node is a read's last resort when no node is
// in rotation, and this one served BSC's blocks to `eth`'s callers: a wrong-chain node's answers, which the
// chain check exists to keep out (seen as one `0x38` in forty `eth_chainId` calls of
// test/upstream/wrong-chain.test.ts on a loaded machine, while its `eth` node was still being checked).

describe("a node that failed before any probe said which chain it is on", () => {
  let bsc: LoopbackNode;
  let gw: RunningGateway;
  const asked = () => bsc.requests.filter((r) => !r.body.includes('"eth_chainId"')).length;

  beforeAll(async () => {
    bsc = await startLoopbackNode(
      firstOf(
        (request) =>
          request.body.includes('"eth_chainId"')
            ? answeringAfter(1_000, jsonRpcResponder({ eth_chainId: "0x38" }))(request)
            : undefined,
        jsonRpcResponder({ eth_blockNumber: "0x2a", eth_getBalance: "0x1" }),
      ),
    );
    gw = await startGateway({
      upstreams: { eth: [{ url: bsc.url, name: "bsc-node" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100, probeTimeoutMs: 150 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await bsc?.close();
  });

  it("is no last resort: a read gets NO_UPSTREAM, and the node no call", async () => {
    const member = () => gw.gateway.upstreams.group("eth", "/")?.members[0];
    await eventually(() => member()?.health.state === "failing", 5_000, "the node failing its chain call");
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    });
    expect(answer.status).toBe(503);
    expect(answer.text).toContain("NO_UPSTREAM");
    expect(asked()).toBe(0);
  });
});
