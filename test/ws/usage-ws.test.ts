import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallDetail } from "../../src/keys/usage-detail.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { evmNode, type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A key's usage of a WebSocket batch (docs/plans.md, "Usage and the dashboard"): a call refused as it was
// about to go (its id already waiting, a full connection) is a refused call under its code, as one
// refused at the check is; the batch's other calls are served, and counted under their methods.

describe("a WebSocket batch with a call refused as it was about to go", () => {
  let node: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void;
  const records: { calls: number; errors: number; units: number; detail: CallDetail | undefined }[] = [];

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startLoopbackWsNode(evmNode({ eth_blockNumber: "0x10" }));
    gw = await startGateway({
      upstreams: { eth: [node.url] },
      usage: {
        record: (_key, _label, calls, errors, units, detail) =>
          records.push({ calls, errors, units, detail }),
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("counts the refused call under its code and the served one under its method, at the served one's price", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    // one id twice: the second is refused, as its id is already waiting on the connection
    client.send(
      JSON.stringify([
        { jsonrpc: "2.0", id: 7, method: "eth_chainId", params: [] },
        { jsonrpc: "2.0", id: 7, method: "eth_blockNumber", params: [] },
      ]),
    );
    const answer = JSON.parse(await client.waitFor((text) => text.startsWith("["))) as { error?: unknown }[];
    expect(answer.filter((a) => a.error !== undefined)).toHaveLength(1);
    const [record] = records;
    // eth_chainId costs 5 (docs/compute-units.md)
    expect(record).toMatchObject({ calls: 2, errors: 1, units: 5 });
    expect(record?.detail?.refusedCodes).toEqual(["INVALID_REQUEST"]);
    expect(record?.detail?.parts?.map((part) => [part.method, part.calls])).toEqual([["eth_chainId", 1]]);
    client.close();
  });
});
