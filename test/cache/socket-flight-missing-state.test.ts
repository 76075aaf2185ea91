import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import {
  evmNode,
  type LoopbackWsNode,
  startLoopbackWsNode,
  WsRpcError,
} from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A WebSocket connection's read of old state is in flight on its full node, for a key without archive
// access; another caller's identical read waits on it (docs/cache.md, "Coalescing"). The full node answers
// geth's "no such state" (`missing trie node`, -32000, as geth's trie.MissingNodeError reads): the
// connection's own client gets ARCHIVE_REQUIRED in its place (docs/upstreams.md, "Archive"), but the node's
// raw error was landed on the flight and given to every caller waiting on it: an archive key's batch got
// the full node's error instead of the archive's answer, and a key without archive access got the raw error
// instead of ARCHIVE_REQUIRED. The archive node is a real anvil with the same chain id.

const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
/** anvil's first dev account's balance at any early block. */
const BALANCE = "0x21e19e0c9bab2400000";
const OLD = "0x5";

describe("a full node's 'no such state' on a connection's flight", () => {
  let node: LoopbackWsNode;
  let archive: Anvil;
  let gw: RunningGateway;
  let restore: () => void;
  let release: () => void = () => {};
  let held = Promise.resolve();

  const balanceAsked = () =>
    [...node.methods(), ...node.httpMethods].filter((m) => m === "eth_getBalance").length;

  beforeAll(async () => {
    restore = resolveTestHosts();
    archive = await startAnvil({ chainId: 1 });
    await archive.rpc("anvil_mine", ["0x20"]);
    node = await startLoopbackWsNode(
      evmNode({
        eth_getBalance: async (params: unknown) => {
          if ((params as string[])[1] !== OLD) return "0x2a";
          await held;
          throw new WsRpcError(-32000, "missing trie node 1f2e3d4c5b6a79808f9e (path )");
        },
      }),
    );
    gw = await startGateway({
      upstreams: { eth: [node.url], "eth-archive": [archive.url] },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
  });
  afterAll(async () => {
    release();
    await gw?.close();
    await node?.close();
    await archive?.stop();
    restore?.();
  });

  /** A connection of a key without archive access with its old read at the node, held there. */
  async function leaderInFlight(): Promise<Client> {
    held = new Promise((resolve) => {
      release = resolve;
    });
    const asked = balanceAsked();
    const leader = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    leader.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [ACCOUNT, OLD] }),
    );
    await eventually(() => balanceAsked() === asked + 1, 3_000, "the connection's read at the node");
    return leader;
  }

  const waiting = (n: number) =>
    eventually(
      async () => (await gw.metric("gateway_cache_waiting", { label: "eth" })) === n,
      3_000,
      "a call waiting on the connection's",
    );

  it("an archive key's batch waiting on it gets the archive node's answer, not the full node's error", async () => {
    const leader = await leaderInFlight();
    const batch = gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify([
        { jsonrpc: "2.0", id: "a", method: "eth_getBalance", params: [ACCOUNT, OLD] },
        { jsonrpc: "2.0", id: "c", method: "eth_chainId", params: [] },
      ]),
      headers: { "content-type": "application/json" },
    });
    await waiting(1);
    release();
    const own = JSON.parse(await leader.waitFor((t) => t.includes('"id":1'))) as {
      error?: { data?: { code?: string } };
    };
    leader.close();
    // the connection's own client is told as before
    expect(own.error?.data?.code).toBe("ARCHIVE_REQUIRED");
    const answers = (await batch).json as { id: string; result?: string; error?: unknown }[];
    expect(answers.find((a) => a.id === "a")).toEqual({ jsonrpc: "2.0", id: "a", result: BALANCE });
  });

  it("a key without archive access waiting on it gets ARCHIVE_REQUIRED, not the full node's error", async () => {
    const leader = await leaderInFlight();
    const single = gw.call("eth", `/${KEYS.noArchive}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "eth_getBalance", params: [ACCOUNT, OLD] }),
      headers: { "content-type": "application/json" },
    });
    await waiting(1);
    release();
    await leader.waitFor((t) => t.includes('"id":1'));
    leader.close();
    const answer = await single;
    expect(answer.text).not.toContain("missing trie node");
    expect(answer.status).toBe(403);
    expect((answer.json as { error: { data?: { code?: string } } }).error.data?.code).toBe(
      "ARCHIVE_REQUIRED",
    );
  });

  it("an archive key's connection waiting on it gets the archive node's answer", async () => {
    const leader = await leaderInFlight();
    const follower = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEYS.all}`);
    follower.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: [ACCOUNT, OLD] }),
    );
    await waiting(1);
    release();
    await leader.waitFor((t) => t.includes('"id":1'));
    leader.close();
    const answer = JSON.parse(await follower.waitFor((t) => t.includes('"id":2'))) as unknown;
    follower.close();
    expect(answer).toEqual({ jsonrpc: "2.0", id: 2, result: BALANCE });
  });
});
