import { WebSocketProvider } from "ethers";
import { createPublicClient, webSocket } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Anvil } from "../support/anvil.js";
import { EMITTER, GENESIS, mineEmitterCall, startSameChainPair } from "../support/emitter-chain.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// Real SDKs' subscriptions through the gateway while the node under them dies. Two real anvil nodes
// follow one chain: started alike and mined alike (same timestamps, same transactions), they build the
// same blocks, hashes and all. The connection is on `a` (`b` is a fallback); `b` gets two blocks `a`
// never sees, then `a` is killed, then `b` mines on. viem and ethers must see every block once, in
// order, and every log, on the socket they opened.

describe("EVM subscriptions survive the loss of their node (real anvil, viem, ethers)", () => {
  let a: Anvil;
  let b: Anvil;
  let gw: RunningGateway;
  let restore: () => void;
  let url: string;
  let time = GENESIS;
  let nonce = 0;

  /** Mines one block on `nodes`, with one call to the emitter in it. */
  async function mine(nodes: readonly Anvil[]): Promise<void> {
    time += 12;
    await mineEmitterCall(nodes, { time, nonce: nonce++ });
  }

  const opened = () => gw.logs.filter((line) => line.includes('"websocket open"')).length;

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
    url = `ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`;
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    restore?.();
  });

  it("viem watchBlockNumber and watchEvent, and ethers on('block'), see every block and log once, in order", async () => {
    const client = createPublicClient({ transport: webSocket(url) });
    const heads: bigint[] = [];
    const logBlocks: bigint[] = [];
    const unwatchHeads = client.watchBlockNumber({ emitOnBegin: false, onBlockNumber: (n) => heads.push(n) });
    const unwatchLogs = client.watchEvent({
      address: EMITTER,
      onLogs: (logs) => logBlocks.push(...logs.map((log) => log.blockNumber as bigint)),
    });
    const provider = new WebSocketProvider(`${url}/`);
    const ethersHeads: number[] = [];
    await provider.on("block", (n: number) => ethersHeads.push(n));
    // viem's newHeads and logs, ethers' newHeads: each answered by a, before a block is mined
    await eventually(
      async () => (await gw.metric("gateway_websocket_subscriptions", { label: "eth" })) === 3,
      5000,
      "the three subscriptions in place",
    );
    const connections = opened();

    for (let i = 0; i < 3; i++) await mine([a, b]);
    await eventually(
      () => heads.length === 3 && logBlocks.length === 3 && ethersHeads.length === 3,
      5000,
      "blocks 1-3",
    );
    // b goes ahead; a never sees blocks 4 and 5, then dies
    for (let i = 0; i < 2; i++) await mine([b]);
    await a.kill("SIGKILL");
    // both sockets (viem's, ethers') moved to b before b mines on
    await eventually(
      async () =>
        (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) === 2,
      5000,
      "both connections moved to b",
    );
    for (let i = 0; i < 2; i++) await mine([b]);

    const all = [1, 2, 3, 4, 5, 6, 7];
    await eventually(
      () => heads.length >= 7 && logBlocks.length >= 7 && ethersHeads.length >= 7,
      5000,
      "blocks 4-7",
    );
    expect(heads).toEqual(all.map(BigInt));
    expect(logBlocks).toEqual(all.map(BigInt));
    expect(ethersHeads).toEqual(all);
    // on the sockets they opened: no SDK reconnected
    expect(opened()).toBe(connections);
    const hashes = await Promise.all(all.map((n) => client.getBlock({ blockNumber: BigInt(n) })));
    expect(hashes.map((block) => block.number)).toEqual(all.map(BigInt));

    unwatchHeads();
    unwatchLogs();
    await provider.destroy();
    await (client.transport as { getRpcClient?: () => Promise<{ close(): void }> })
      .getRpcClient?.()
      .then((c) => c.close());
  });
});
