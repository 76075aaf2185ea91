import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// java-tron's balance at a block (TRON's exchange integration: an account's balance at the block
// getnowblock named): POST /wallet/getaccountbalance {account_identifier, block_identifier: {hash, number}}
// and POST /wallet/getblockbalance {hash, number}. Wallet.getAccountBalance and getBlockBalance look the
// number up in the BlockIndexStore, which throws ItemNotFoundException("number: N is not found!") for a block
// the node has not reached, and the servlet answers that 200 {"Error": …}. A caller who saw the head block
// from the node ahead must never be sent to the node behind for it.

const trx = endpointsByLabel.get("trx") as Endpoint;
const T = 70_000_000;
const HASH = `${(T + 1).toString(16).padStart(16, "0")}${"ab".repeat(24)}`;
const ADDRESS = "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7";

describe("a java-tron balance at a block reaches a node that has the block", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    const balances =
      (height: number): Responder =>
      (request) => {
        const route = request.url.split("?")[0];
        if (route !== "/wallet/getaccountbalance" && route !== "/wallet/getblockbalance") return undefined;
        const body = JSON.parse(request.body) as Record<string, { number?: number } | number | undefined>;
        const block = (route === "/wallet/getaccountbalance" ? body.block_identifier : body) as {
          hash: string;
          number: number;
        };
        const json =
          block.number > height
            ? {
                Error: `class org.tron.core.exception.ItemNotFoundException : number: ${block.number} is not found!`,
              }
            : route === "/wallet/getaccountbalance"
              ? { balance: 1_000_000, block_identifier: block }
              : { block_identifier: block, timestamp: 1_700_000_000_000, transaction_balance_trace: [] };
        return {
          headers: { "content-type": "application/json; charset=utf-8" },
          body: `${JSON.stringify(json)}\n`,
        };
      };
    nodes = await Promise.all(
      [T + 1, T].map((height) =>
        startLoopbackNode(firstOf(balances(height), softwareNode(trx, nodeState(trx, height)))),
      ),
    );
    const list = nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" }));
    gw = await startGateway({
      upstreams: { trx: Object.fromEntries(trx.mounts.map((m) => [m.path, list])) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "trx");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("10 balances of an account at the block only the node ahead has: never its Error", async () => {
    const body = JSON.stringify({
      account_identifier: { address: ADDRESS },
      block_identifier: { hash: HASH, number: T + 1 },
      visible: true,
    });
    for (let i = 0; i < 10; i++) {
      const r = await gw.call("trx", `/${KEYS.all}/wallet/getaccountbalance`, { body });
      expect(r.json, `read ${i}`).toMatchObject({ balance: 1_000_000 });
    }
    expect(nodes[1]?.requests.filter((r) => r.url.startsWith("/wallet/getaccountbalance"))).toEqual([]);
  });

  it("10 balance changes of the block only the node ahead has: never its Error", async () => {
    const body = JSON.stringify({ hash: HASH, number: T + 1, visible: true });
    for (let i = 0; i < 10; i++) {
      const r = await gw.call("trx", `/${KEYS.all}/wallet/getblockbalance`, { body });
      expect(r.json, `read ${i}`).toMatchObject({ block_identifier: { number: T + 1 } });
    }
    expect(nodes[1]?.requests.filter((r) => r.url.startsWith("/wallet/getblockbalance"))).toEqual([]);
  });
});
