import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { EMITTER, EMITTER_CODE } from "../support/emitter-chain.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A dApp watching a contract's events on a WebSocket (ethers `contract.on(...)`, viem `watchContractEvent`
// over webSocket: a `logs` subscription) is sent a log of block N+1, then reads the head, on the socket or
// over HTTP (ethers' `getBlockNumber`, to count confirmations): it must not be told N, the head the cache
// kept from before the block. A log pushed names its block (registry `events.number`). Real anvil.
const GENESIS = 1_700_000_000;
const DEV = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

for (const cached of [true, false]) {
  describe(`a log pushed, then a head read (cache ${cached ? "on" : "off"})`, () => {
    let a: Anvil;
    let gw: RunningGateway;
    let restore: () => void = () => {};

    beforeAll(async () => {
      restore = resolveTestHosts();
      a = await startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 });
      await a.rpc("anvil_setCode", [EMITTER, EMITTER_CODE]);
      for (let h = 1; h <= 6; h++) await a.rpc("evm_mine", [GENESIS + 12 * h]);
      gw = await startGateway({
        upstreams: { eth: [{ url: a.url, ws: a.url.replace("http:", "ws:"), name: "a" }] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        cache: { ...DEFAULT_CACHE, enabled: cached },
      });
      await everyNodeInRotation(gw);
    });
    afterAll(async () => {
      restore();
      await gw?.close();
      await a?.stop();
    });

    it("never answers a head below the block of the log it was just sent", async () => {
      const socket = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
      const sub = await socket.call("eth_subscribe", ["logs", { address: EMITTER }]);
      expect(typeof sub.result).toBe("string");
      expect(Number((await socket.call("eth_blockNumber", [])).result)).toBe(6);
      const http = async () =>
        Number(
          (
            (await gw.call("eth", `/${KEYS.all}`, { body: rpcBody("eth_blockNumber", []) })).json as {
              result: string;
            }
          ).result,
        );
      expect(await http()).toBe(6);
      await a.rpc("eth_sendTransaction", [{ from: DEV, to: EMITTER, gas: "0x186a0" }]);
      await a.rpc("evm_mine", [GENESIS + 12 * 7]);
      const pushed = JSON.parse(await socket.waitFor((t) => t.includes('"eth_subscription"')));
      expect(pushed.params.result.blockNumber).toBe("0x7");
      expect(Number((await socket.call("eth_blockNumber", [])).result)).toBe(7);
      expect(await http()).toBe(7);
      socket.close();
    });
  });
}
