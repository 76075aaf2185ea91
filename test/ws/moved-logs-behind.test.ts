import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Anvil } from "../support/anvil.js";
import { EMITTER, GENESIS, mineEmitterCall, startSameChainPair } from "../support/emitter-chain.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A `logs` subscription moved to a node one block behind the last log the client was sent: when the move
// happens, the new node has not built that height yet, so whether its block there is the one the client's
// log came from is known only once it builds it. Two real anvils on one chain (same genesis, same blocks)
// up to block 2; block 3 is built by a, whose log reaches the client, then a dies and the connection moves
// to b, at height 2, which builds its own block 3 and then block 4 (docs/websocket.md).

interface Log {
  readonly blockNumber: string;
  readonly blockHash: string;
  readonly transactionHash: string;
  readonly removed?: boolean;
}

/** What b builds at height 3 after the move: a's block again, another block with a log, one without. */
type Third = "same" | "another" | "another without a log";

/**
 * Runs the move with b building `third` at height 3 then a block 4, and gives the logs sent after a's. Alone,
 * the subscription's notifications pass undecoded until the move (connection.ts); beside a `newHeads`
 * subscription (`withHeads`), each is read.
 */
/** What the client was sent: a's block-3 log, the logs after it, and b's logs of blocks 3 and 4. */
interface Seen {
  readonly lost: Log;
  readonly after: Log[];
  readonly b3: Log | undefined;
  readonly b4: Log;
}

function movedBehind(third: Third, withHeads = false): { logs: () => Promise<Seen> } {
  let a: Anvil;
  let b: Anvil;
  let gw: RunningGateway;
  let restore: () => void = () => {};

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

  return {
    logs: async () => {
      const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
      const subscribed = await client.call("eth_subscribe", ["logs", { address: EMITTER }]);
      expect(subscribed.result).toEqual(expect.any(String));
      if (withHeads)
        expect((await client.call("eth_subscribe", ["newHeads"])).result).toEqual(expect.any(String));
      const logs = (): Log[] =>
        client.received
          .map(
            (text) =>
              JSON.parse(text) as { method?: string; params?: { subscription: unknown; result: Log } },
          )
          .filter(
            (message) =>
              message.method === "eth_subscription" && message.params?.subscription === subscribed.result,
          )
          .map((message) => message.params?.result as Log);
      // blocks 1 and 2 alike on both nodes; block 3 on a only
      await mineEmitterCall([a, b], { time: GENESIS + 12, nonce: 0 });
      await mineEmitterCall([a, b], { time: GENESIS + 24, nonce: 1 });
      await mineEmitterCall([a], { time: GENESIS + 36, nonce: 2 });
      await eventually(() => logs().length === 3, 5_000, "the logs of blocks 1-3 from a");
      const lost = logs()[2] as Log;
      await a.kill("SIGKILL");
      await eventually(
        async () =>
          (await gw.metric("gateway_websocket_moves_total", { label: "eth", outcome: "moved" })) === 1,
        5_000,
        "the connection moved to b",
      );
      // b builds its block 3 only now, at height 2 when the connection moved to it
      let nonce = 3;
      if (third === "same") await mineEmitterCall([b], { time: GENESIS + 36, nonce: 2 });
      else if (third === "another")
        await mineEmitterCall([b], { time: GENESIS + 37, nonce: 2, gas: 120_000n });
      else {
        await b.rpc("evm_mine", [GENESIS + 37]);
        nonce = 2;
      }
      await mineEmitterCall([b], { time: GENESIS + 49, nonce });
      const b3 = (await b.rpc<Log[]>("eth_getLogs", [{ fromBlock: "0x3", toBlock: "0x3" }]))[0];
      const b4 = (await b.rpc<Log[]>("eth_getLogs", [{ fromBlock: "0x4", toBlock: "0x4" }]))[0] as Log;
      await eventually(() => logs().some((l) => l.blockHash === b4.blockHash), 5_000, "b's block-4 log");
      // one block more, whose log comes after anything the move would still send of blocks 3 and 4
      await mineEmitterCall([b], { time: GENESIS + 61, nonce: nonce + 1 });
      await eventually(() => logs().some((l) => l.blockNumber === "0x5"), 5_000, "b's block-5 log");
      client.close();
      return {
        lost,
        after: logs()
          .slice(3)
          .filter((l) => l.blockNumber !== "0x5"),
        b3,
        b4,
      };
    },
  };
}

describe.each([
  ["alone", false],
  ["beside a newHeads subscription", true],
])(
  "a logs subscription %s moved to a node one block behind, which then builds another block there",
  (_name, withHeads) => {
    const run = movedBehind("another", withHeads);
    it("sends the lost block's log again with removed: true, then the new node's of that height", async () => {
      const { lost, after, b3, b4 } = await run.logs();
      expect(b3?.blockHash).not.toBe(lost.blockHash);
      expect(after).toEqual([
        { ...lost, removed: true },
        expect.objectContaining({ blockHash: b3?.blockHash, transactionHash: b3?.transactionHash }),
        expect.objectContaining({ blockHash: b4.blockHash, blockNumber: "0x4" }),
      ]);
    }, 30_000);
  },
);

describe("a logs subscription moved to a node one block behind, which then builds another block there with no log", () => {
  const run = movedBehind("another without a log");
  it("sends the lost block's log again with removed: true, then the new node's next", async () => {
    const { lost, after, b3, b4 } = await run.logs();
    expect(b3).toBeUndefined();
    expect(after).toEqual([
      { ...lost, removed: true },
      expect.objectContaining({ blockHash: b4.blockHash, blockNumber: "0x4" }),
    ]);
  }, 30_000);
});

describe("a logs subscription moved to a node one block behind, which then builds the same block there", () => {
  const run = movedBehind("same");
  it("sends nothing again and takes nothing back: only the new node's next log", async () => {
    const { lost, after, b3, b4 } = await run.logs();
    expect(b3).toEqual(lost);
    expect(after).toEqual([expect.objectContaining({ blockHash: b4.blockHash, blockNumber: "0x4" })]);
  }, 30_000);
});
