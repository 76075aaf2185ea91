import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A client that leaves while its call waits on another's identical call in flight (docs/cache.md,
// coalescing) gets no answer and is charged nothing: its request ends as CLIENT_CLOSED (499), as one relayed
// alone does. Before, the shared answer was written onto its closed response: the access line said 200
// with the call's units, and the key's usage was charged them.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Long enough for a second client to join the flight and leave before the node answers. */
const NODE_MS = 400;

describe("a coalesced caller that left before the answer", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  const answer = jsonRpcResponder({ net_version: "1", eth_chainId: "0x1" });
  const lineOf = (requestId: string) =>
    gw.logs.map((line) => JSON.parse(line)).find((line) => line.requestId === requestId);
  const coalesced = () => gw.metric("gateway_cache_requests_total", { label: "eth", outcome: "coalesced" });
  /** Waits until the node holds a call of `method`: the flight has begun. */
  const atNode = (method: string) =>
    eventually(
      () => node.requests.some((seen) => seen.body.includes(method)),
      2_000,
      `${method} at the node`,
    );
  /** A call from a client that gives up once another caller has joined the flight (`joined` counted). */
  const leaving = async (requestId: string, method: string, joined: number) => {
    const controller = new AbortController();
    const call = request(`${gw.origin}/${KEYS.all}`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json", "x-request-id": requestId },
      body: rpcBody(method),
      signal: controller.signal,
    }).catch(() => undefined);
    await eventually(async () => (await coalesced()) >= joined, 2_000, "a caller coalesced");
    controller.abort();
    await call;
  };

  beforeAll(async () => {
    node = await startLoopbackNode(async (req) => {
      await sleep(NODE_MS);
      return answer(req);
    });
    gw = await startGateway({ upstreams: { eth: [node.url] }, cache: { ...DEFAULT_CACHE, enabled: true } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("a waiter that left is CLIENT_CLOSED and costs nothing; the one that stayed gets its answer", async () => {
    const joined = (await coalesced()) + 1;
    const stayed = gw.call("eth", `/${KEYS.all}`, { body: rpcBody("net_version") });
    await atNode("net_version");
    await leaving("left-waiter", "net_version", joined);
    const answered = await stayed;
    expect(answered.status).toBe(200);
    expect(answered.headers["x-compute-units"]).toBe("5");
    await expect
      .poll(() => lineOf("left-waiter"))
      .toMatchObject({ status: 499, error: "CLIENT_CLOSED", cache: "coalesced" });
    expect(lineOf("left-waiter")?.cu).toBeUndefined();
  });

  it("so is the client that started the call, and the one that joined it still gets the answer", async () => {
    // another call than the first test's, whose answer the cache keeps
    const left = leaving("left-leader", "eth_chainId", (await coalesced()) + 1);
    await atNode("eth_chainId");
    const joined = gw.call("eth", `/${KEYS.ethOnly}`, { body: rpcBody("eth_chainId") });
    await left;
    const answered = await joined;
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.text)).toMatchObject({ result: "0x1" });
    expect(answered.headers["x-cache"]).toBe("coalesced");
    await expect.poll(() => lineOf("left-leader")).toMatchObject({ status: 499, error: "CLIENT_CLOSED" });
    expect(lineOf("left-leader")?.cu).toBeUndefined();
  });
});
