import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// Bitcoin Core relays a transaction of up to MAX_STANDARD_TX_WEIGHT, 400,000 weight units
// (src/policy/policy.h): a transaction's weight is at least its size, and one whose bytes are mostly
// witness (an inscription's envelope, a large multisig spend) is close to 400,000 bytes, which
// sendrawtransaction takes in hex, twice as many characters; a package (submitpackage) may weigh 404,000
// (MAX_PACKAGE_WEIGHT, src/policy/packages.h). bitcoind reads a body of up to 32 MiB (src/httpserver.cpp
// MAX_SIZE). A standard transaction of 300,000 bytes is a request body of 600 KB: the gateway's default
// limit (256 KiB) refused it with 413, so such a transaction could not be sent through it at all.

const btc = endpointsByLabel.get("btc") as Endpoint;
const TX_BYTES = 390_000;
const TXID = "cd".repeat(32);

describe("btc: sendrawtransaction of a large standard transaction", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(btc, nodeState(btc, 870_000), [""], {
        answers: {
          sendrawtransaction: {
            result: (_s, params) => {
              const hex = (params as unknown[])[0];
              // rpc/mempool.cpp: DecodeHexTx, then the mempool's checks
              if (typeof hex !== "string" || !/^(?:[0-9a-f]{2})+$/.test(hex))
                throw new NodeRejection(-22, "TX decode failed. Make sure the tx has at least one input.");
              return TXID;
            },
          },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { btc: [{ url: node.url, name: "n0" }] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("a 390,000-byte transaction in hex reaches the node, which answers its txid", async () => {
    const hex = "02".repeat(TX_BYTES);
    const r = await gw.call("btc", `/${KEYS.all}/`, {
      body: JSON.stringify({ jsonrpc: "1.0", id: "tx", method: "sendrawtransaction", params: [hex] }),
    });
    expect(`${r.status} ${r.text.slice(0, 300).trim()}`).toBe(
      `200 {"result":"${TXID}","error":null,"id":"tx"}`,
    );
  });
});
