import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// The gateway's own calls on a connection's node socket (the head read where a logs subscription starts, a
// move's gap fill) went with the ids "gateway-1", "gateway-2", … (docs/websocket.md), which a client's
// string ids may be too: a client call with the id "gateway-1" sent beside a logs subscription had its answer
// taken for the gateway's head read, and got the head's answer in its place (eth_chainId answered with the
// block number). Real anvil.

describe("a client call whose id is the one the gateway's own call takes", () => {
  let node: Anvil;
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startAnvil({ chainId: 1 });
    await node.rpc("anvil_mine", ["0x5"]);
    gw = await startGateway({ upstreams: { eth: [{ url: node.url, name: "a" }] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.stop();
    restore?.();
  });

  it("gets its own answer", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      for (let n = 1; n <= 3; n++) {
        client.send(JSON.stringify({ jsonrpc: "2.0", id: n, method: "eth_subscribe", params: ["logs", {}] }));
        client.send(
          JSON.stringify({ jsonrpc: "2.0", id: `gateway-${n}`, method: "eth_chainId", params: [] }),
        );
      }
      for (let n = 1; n <= 3; n++) {
        expect((await client.answerTo(String(n))).result).toMatch(/^0x[0-9a-f]+$/);
        expect((await client.answerTo(`"gateway-${n}"`)).result).toBe("0x1");
      }
    } finally {
      client.close();
    }
  });
});
