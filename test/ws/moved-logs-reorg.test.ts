import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Anvil } from "../support/anvil.js";
import { EMITTER, GENESIS, mineEmitterCall, startSameChainPair } from "../support/emitter-chain.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A `logs` subscription moved to a node that disagrees on the last block the client had logs from (docs/
// websocket.md): the two nodes built different blocks at that height, as when a node dies in a
// reorganisation it alone had seen. The client gets the dead node's logs of that block again with
// `removed: true`, as geth sends them in its own reorganisation, then the new node's logs of its block,
// which are news, not repeats. Two real anvils on one chain (same genesis, same blocks) up to that height.

interface Log {
  readonly blockNumber: string;
  readonly blockHash: string;
  readonly transactionHash: string;
  readonly removed?: boolean;
}

// alone, its notifications pass undecoded until a move (connection.ts); beside another, each is read
describe.each([
  ["alone", false],
  ["beside a newHeads subscription", true],
])("a logs subscription %s moved across a block the nodes disagree on (real anvils)", (_name, withHeads) => {
  let a: Anvil;
  let b: Anvil;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  let nonce = 0;

  /** Mines one block at `time` on each of `nodes`, with one call to the emitter of `gas` in it. */
  const mine = (nodes: readonly Anvil[], time: number, gas = 100_000n) =>
    mineEmitterCall(nodes, { time, nonce, gas });

  beforeAll(async () => {
    restore = resolveTestHosts();
    [a, b] = await startSameChainPair();
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b", tier: "fallback" },
        ],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    restore();
  });

  it("sends the lost block's logs again with removed: true, then the new node's", async () => {
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const subscribed = await client.call("eth_subscribe", ["logs", { address: EMITTER }]);
    const logs = (): Log[] =>
      client.received
        .map(
          (text) => JSON.parse(text) as { method?: string; params?: { subscription: unknown; result: Log } },
        )
        .filter(
          (message) =>
            message.method === "eth_subscription" && message.params?.subscription === subscribed.result,
        )
        .map((message) => message.params?.result as Log);
    expect(subscribed.result).toEqual(expect.any(String));
    if (withHeads)
      expect((await client.call("eth_subscribe", ["newHeads"])).result).toEqual(expect.any(String));
    // blocks 1 and 2 alike on both nodes; block 3 another on each, each with its own log
    await mine([a, b], GENESIS + 12);
    nonce++;
    await mine([a, b], GENESIS + 24);
    nonce++;
    await mine([a], GENESIS + 36);
    await mine([b], GENESIS + 37, 120_000n);
    nonce++;
    await eventually(() => logs().length === 3, 5_000, "the logs of blocks 1-3 from a");
    const lost = logs()[2] as Log;
    await a.kill("SIGKILL");
    await eventually(
      async () =>
        (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) === 1,
      5_000,
      "the connection moved to b",
    );
    const replacing = (await b.rpc<Log[]>("eth_getLogs", [{ fromBlock: "0x3", toBlock: "0x3" }]))[0] as Log;
    expect(replacing.blockHash).not.toBe(lost.blockHash);
    await eventually(() => logs().length === 5, 5_000, "the lost log taken back, b's sent");
    expect(logs().slice(3)).toEqual([
      { ...lost, removed: true },
      expect.objectContaining({ blockHash: replacing.blockHash, transactionHash: replacing.transactionHash }),
    ]);
    // and b's next block's log follows, once
    await mine([b], GENESIS + 49);
    await eventually(() => logs().length === 6, 5_000, "block 4's log");
    expect(logs()[5]).toMatchObject({ blockNumber: "0x4" });
    client.close();
  });
});
