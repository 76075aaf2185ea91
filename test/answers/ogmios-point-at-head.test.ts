import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import type { NodeState } from "../support/node-software.js";
import { ogmiosAsker } from "../support/ogmios-gateway.js";
import { type OgmiosNode, ogmiosPoint, startOgmiosNode } from "../support/ogmios-ws-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A Cardano client reads the tip over HTTP (Ogmios' queryLedgerState/tip or queryNetwork/tip, which goes to a node at the label's
// served head), then on its WebSocket acquires the ledger state at that point (acquireLedgerState, to run
// its queries at one block) or starts chain sync there (findIntersection). Its socket was opened on the other
// node, a block behind: cardano-node has not that point on its chain, and Ogmios answers error 2000 "Failed
// to acquire requested point." or 1000 "No intersection found." (test/support/ogmios-ws-node.ts). A point
// carries no height, but the caller learned it from the served head: the call must wait for its node to reach
// that head, as a read at the head does. (A tip read from a node that made a block before the label served
// it, by its head call or a probe, names a point the gateway cannot place: not covered here.)

const H = 12_000_000;
/** What a connection may hold while its node catches up (limits.ws.maxBufferedBytes): small, to pass here. */
const BOUND = 64 * 1024;

describe("Ogmios state acquired on a socket at the tip just read over HTTP, the socket's node a block behind", () => {
  const ada = endpointsByLabel.get("ada") as Endpoint;
  let restore: () => void;
  let nodes: OgmiosNode[] = [];
  let states: NodeState[] = [];
  let gw: RunningGateway;

  beforeAll(async () => {
    restore = resolveTestHosts();
    states = [nodeState(ada, H), nodeState(ada, H)];
    nodes = await Promise.all(states.map((state) => startOgmiosNode(ada, state)));
    gw = await startGateway({
      upstreams: { ada: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      limits: { ws: { ...DEFAULT_LIMITS.ws, maxBufferedBytes: BOUND } },
    });
    await everyNodeInRotation(gw, "ada");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
    restore?.();
  });

  /** A call over HTTP, its result. */
  const http = async (method: string) =>
    (
      (
        await gw.call("ada", `/${KEYS.all}`, {
          body: JSON.stringify({ jsonrpc: "2.0", method, id: 1 }),
        })
      ).json as { result?: unknown }
    ).result;

  /** Resolves once the label has served `height` (its height read over HTTP, or probed). */
  const servedAt = (height: number) =>
    eventually(
      async () => (await http("queryNetwork/blockHeight")) === height,
      5_000,
      "the head served from the node ahead",
    );

  for (const method of ["acquireLedgerState", "findIntersection"] as const)
    it(`${method} at that tip is answered, not refused as a point not on the chain`, async () => {
      const client = await Client.open(`ws://ada.${DOMAIN}:${gw.port}/${KEYS.all}`);
      const ask = ogmiosAsker();
      try {
        for (const state of states) state.height = Math.max(...states.map((s) => s.height));
        const seen = nodes.map((n) => n.wsMessages.length);
        await ask(client, "queryNetwork/blockHeight");
        const on = nodes.findIndex((n, i) => n.wsMessages.length > (seen[i] as number));
        expect(on).toBeGreaterThanOrEqual(0);
        // the other node makes a block
        const other = states[1 - on] as NodeState;
        other.height += 1;
        // the label has served that block (its height read over HTTP, or probed), and the caller its tip
        await servedAt(other.height);
        const tip = await http("queryLedgerState/tip");
        expect(tip).toEqual(ogmiosPoint(other.height));
        // the socket's node makes it a little later
        setTimeout(() => {
          (states[on] as NodeState).height = other.height;
        }, 300).unref();
        const params = method === "acquireLedgerState" ? { point: tip } : { points: [tip] };
        const answer = await ask(client, method, params);
        expect(answer.error).toBeUndefined();
        expect(answer.result).toMatchObject(
          method === "acquireLedgerState" ? { acquired: "ledgerState", point: tip } : { intersection: tip },
        );
      } finally {
        client.ws.close();
      }
    });

  it("a query on a ledger state acquired is answered there, the socket's node behind the served head", async () => {
    const client = await Client.open(`ws://ada.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const ask = ogmiosAsker();
    try {
      for (const state of states) state.height = Math.max(...states.map((s) => s.height));
      const seen = nodes.map((n) => n.wsMessages.length);
      const old = ogmiosPoint((states[0] as NodeState).height - 5);
      expect((await ask(client, "acquireLedgerState", { point: old })).result).toMatchObject({ point: old });
      const on = nodes.findIndex((n, i) => n.wsMessages.length > (seen[i] as number));
      const other = states[1 - on] as NodeState;
      other.height += 1;
      await servedAt(other.height);
      // Protocol/StateQuery.hs: queryLedgerState/* with a state acquired answer at its point
      expect((await ask(client, "queryLedgerState/tip")).result).toEqual(old);
    } finally {
      client.ws.close();
    }
  });

  it("what a client sends behind a call waiting for its node is bounded: past it the connection is closed 1008", async () => {
    const client = await Client.open(`ws://ada.${DOMAIN}:${gw.port}/${KEYS.all}`);
    const ask = ogmiosAsker();
    try {
      for (const state of states) state.height = Math.max(...states.map((s) => s.height));
      const seen = nodes.map((n) => n.wsMessages.length);
      await ask(client, "queryNetwork/blockHeight");
      const on = nodes.findIndex((n, i) => n.wsMessages.length > (seen[i] as number));
      const other = states[1 - on] as NodeState;
      other.height += 1;
      await servedAt(other.height);
      // the socket's node stays behind: the acquire waits for it, and what follows waits behind the acquire
      const point = ogmiosPoint(other.height);
      client.send(
        JSON.stringify({ jsonrpc: "2.0", method: "acquireLedgerState", params: { point }, id: "a" }),
      );
      const addresses = Array.from({ length: 100 }, (_, i) => `addr_test1${String(i).padStart(98, "q")}`);
      const query = JSON.stringify({
        jsonrpc: "2.0",
        method: "queryLedgerState/utxo",
        params: { addresses },
      });
      for (let sent = 0; sent <= 2 * BOUND; sent += query.length) client.send(query);
      expect(await client.closed).toEqual({
        code: 1008,
        reason: "too much sent while its node catches up with the head",
      });
    } finally {
      (states[0] as NodeState).height = Math.max(...states.map((s) => s.height));
      (states[1] as NodeState).height = (states[0] as NodeState).height;
      client.ws.close();
    }
  });
});
