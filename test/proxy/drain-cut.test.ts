import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { firstOf, jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A stop waits limits.drainTimeoutMs for the requests in flight, then cuts them. What it cut is the
// stop's doing: DRAIN_CUT in the access line and the metrics, and a warning with how many, not the
// CLIENT_CLOSED of a caller who left, which the error ratio and its alerts leave out.

describe("requests a stop cuts at its drain deadline", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      firstOf(
        (r) => (r.body.includes("eth_getBalance") ? new Promise<undefined>(() => {}) : undefined),
        jsonRpcResponder({ eth_blockNumber: "0x1" }),
      ),
    );
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      limits: { ...DEFAULT_LIMITS, shutdownDelayMs: 0, drainTimeoutMs: 300 },
    });
  });
  afterAll(async () => {
    await node?.close();
  });

  it("are logged as DRAIN_CUT, with a warning that counts them", async () => {
    const hanging = gw
      .call("eth", `/${KEYS.all}/`, { body: rpcBody("eth_getBalance", [`0x${"00".repeat(20)}`, "latest"]) })
      .catch((error: Error) => error);
    await eventually(
      () => node.requests.some((r) => r.body.includes("eth_getBalance")),
      3_000,
      "at the node",
    );
    await gw.close();
    expect(await hanging).toBeInstanceOf(Error);
    const line = gw.logs.find((l) => l.includes('"msg":"request"') && l.includes("eth_getBalance")) ?? "";
    expect(line).toContain('"error":"DRAIN_CUT"');
    // the gateway's failure, as documented, not a caller's leaving (499)
    expect(line).toContain('"status":503');
    expect(line).toContain('"level":"warn"');
    const warning = gw.logs.find((l) => l.includes("drain deadline passed")) ?? "";
    expect(JSON.parse(warning)).toMatchObject({ level: "warn", requests: 1, drainTimeoutMs: 300 });
  });
});
