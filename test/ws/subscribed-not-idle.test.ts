import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { EMITTER, EMITTER_CODE, GENESIS, mineEmitterCall } from "../support/emitter-chain.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A dApp's logs subscription on a quiet contract: nothing either way for longer than idleTimeoutMs, while
// the client answers every ping. The gateway closed it with 1000 "idle timeout", and ethers' v6
// WebSocketProvider, which opens no socket again, heard no log after. A connection that holds a
// subscription waits for its node, and is not idle; one that holds none is closed as before. Real anvil.

describe("a connection whose only subscription has nothing to say for a while", () => {
  let a: Anvil;
  let gw: RunningGateway;
  let restore: () => void;
  const idleTimeoutMs = 600;

  beforeAll(async () => {
    restore = resolveTestHosts();
    a = await startAnvil({ sameChainAs: { genesisTimestamp: GENESIS } });
    await a.rpc("anvil_setCode", [EMITTER, EMITTER_CODE]);
    gw = await startGateway({
      upstreams: { eth: [{ url: a.url, name: "a" }] },
      limits: { ws: { ...DEFAULT_LIMITS.ws, idleTimeoutMs, pingIntervalMs: 100 } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await a?.stop();
    restore?.();
  });

  it("stays open and gets the log when it comes, and is idle again once unsubscribed", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    let pings = 0;
    client.ws.on("ping", () => pings++);
    try {
      const id = (await client.call("eth_subscribe", ["logs", { address: EMITTER }])).result;
      // pinged for well past the idle timeout, nothing else either way
      await eventually(() => pings >= 15 || !client.isOpen, 10_000, "pings past the idle timeout");
      expect(client.isOpen).toBe(true);
      await mineEmitterCall([a], { time: GENESIS + 12, nonce: 0 });
      await client.waitFor((t) => t.includes('"eth_subscription"') && t.includes(String(id)), 5_000);
      expect((await client.call("eth_unsubscribe", [id])).result).toBe(true);
      expect(await client.closed).toEqual({ code: 1000, reason: "idle timeout" });
    } finally {
      client.close();
    }
  }, 20_000);
});
