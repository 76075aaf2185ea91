import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A blob transaction (EIP-4844) is sent whole, its blobs in hex: 9 blobs are some 2.4 MB, far past the
// deployment's 256 KiB body limit, which refused every blob transaction on eth. A network whose
// transactions carry blobs (registry `blobsPerTransaction`) takes a body of that many; others keep the
// deployment's limit.

/** An eth_sendRawTransaction whose raw transaction is `blobs` blobs of hex, as a type-3 network form is. */
const blobTransaction = (blobs: number) =>
  rpcBody("eth_sendRawTransaction", [`0x03${"ab".repeat(blobs * (128 * 1024 + 2 * 48) + 512)}`]);

describe("a blob transaction's body", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_sendRawTransaction: `0x${"12".repeat(32)}` }));
    gw = await startGateway({ upstreams: { eth: [node.url], avax: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("of the most blobs eth takes reaches its node", async () => {
    const body = blobTransaction(9);
    expect(body.length).toBeGreaterThan(2_300_000);
    const answer = await gw.call("eth", `/${KEYS.all}`, { body });
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    expect(node.requests.at(-1)?.body.length).toBe(body.length);
  });

  it("past that is BODY_TOO_LARGE, naming the limit and what to do", async () => {
    const limit = endpointsByLabel.get("eth")?.bodyBytes as number;
    expect(limit).toBeGreaterThan(DEFAULT_LIMITS.maxBodyBytes);
    const answer = await gw.call("eth", `/${KEYS.all}`, { body: blobTransaction(10) });
    expect(answer.status).toBe(413);
    expect(answer.json).toMatchObject({
      error: { code: -32021, data: { code: "BODY_TOO_LARGE", maxBytes: limit, reason: expect.any(String) } },
    });
  });

  it("on a network whose transactions carry no blobs is BODY_TOO_LARGE past the deployment's limit", async () => {
    const sent = node.requests.length;
    const answer = await gw.call("avax", `/${KEYS.all}`, { body: blobTransaction(2) });
    expect(answer.status).toBe(413);
    expect(answer.json).toMatchObject({
      error: { data: { code: "BODY_TOO_LARGE", maxBytes: DEFAULT_LIMITS.maxBodyBytes } },
    });
    expect(node.requests.length).toBe(sent);
  });
});
