import { type RawData, WebSocketServer } from "ws";
import type { Endpoint } from "../../src/registry/types.js";
import { type LoopbackNode, startLoopbackNode } from "./loopback-node.js";
import type { NodeState } from "./node-software.js";
import { softwareNode } from "./software-node.js";

// An Ogmios v6 node (CardanoSolutions/ogmios server/src/Ogmios/App/Protocol.hs) on one port, as Ogmios
// serves both: JSON-RPC over HTTP, each request a query at the tip, and over a WebSocket, where every
// answer names its method beside its id (`{"jsonrpc":"2.0","method":…,"result":…,"id":…}`) and a ledger
// state acquired (`acquireLedgerState {point}`) holds for the connection's `queryLedgerState/*` until
// `releaseLedgerState` (Protocol/StateQuery.hs: a query with none acquired acquires the tip for itself).
// A point past the node's tip is not on its chain: the node's LedgerDB refuses to acquire it
// (AcquireFailurePointNotOnChain), which Ogmios answers error 2000 "Failed to acquire requested point."
// with data "Target point doesn't longer exist." (Data/Json/Query.hs encodeAcquireFailure), and chain sync
// finds no intersection with it: error 1000 "No intersection found." with the node's tip
// (Data/Protocol/ChainSync.hs, FindIntersectionResponse IntersectionNotFound).

/** A point on the chain at a height: its slot and its block's hash, as Ogmios writes one. */
export const ogmiosPoint = (height: number) => ({
  slot: 140_000_000 + height * 20,
  id: height.toString(16).padStart(64, "0"),
});

/** The epoch of the block at a height: 432,000 slots an epoch (the Shelley genesis' epochLength). */
export const ogmiosEpoch = (height: number) => Math.floor(ogmiosPoint(height).slot / 432_000);

/** What the node answers a call at a height (the tip's, or the connection's acquired point's). */
const LEDGER: Readonly<Record<string, (height: number) => unknown>> = {
  "queryLedgerState/tip": ogmiosPoint,
  "queryLedgerState/epoch": ogmiosEpoch,
};

export interface OgmiosNode extends LoopbackNode {
  /** Every message the node's WebSockets received, as text. */
  readonly wsMessages: string[];
  /** Holds the WebSocket answers to `method` until the promise settles. */
  hold(method: string, until: Promise<void>): void;
}

export async function startOgmiosNode(endpoint: Endpoint, state: NodeState): Promise<OgmiosNode> {
  const answers = Object.fromEntries(
    Object.entries(LEDGER).map(([method, at]) => [method, { result: (s: NodeState) => at(s.height) }]),
  );
  const node = await startLoopbackNode(softwareNode(endpoint, state, [""], { answers }));
  const wsMessages: string[] = [];
  const held = new Map<string, Promise<void>>();
  const wss = new WebSocketServer({ server: node.server, perMessageDeflate: false });
  wss.on("connection", (socket) => {
    let acquired: number | undefined;
    socket.on("message", async (data: RawData) => {
      wsMessages.push(String(data));
      const call = JSON.parse(String(data)) as {
        method: string;
        params?: { point?: { id?: string } };
        id?: unknown;
      };
      await held.get(call.method);
      const height = acquired ?? state.height;
      let result: unknown;
      let error: { code: number; message: string; data?: unknown } | undefined;
      if (call.method === "acquireLedgerState") {
        const point = Number.parseInt(call.params?.point?.id ?? "", 16);
        if (point > state.height)
          error = {
            code: 2000,
            message: "Failed to acquire requested point.",
            data: "Target point doesn't longer exist.",
          };
        else {
          acquired = point;
          result = { acquired: "ledgerState", point: ogmiosPoint(acquired) };
        }
      } else if (call.method === "findIntersection") {
        const points = (call.params as { points?: { id?: string }[] } | undefined)?.points ?? [];
        const found = points
          .map((p) => Number.parseInt(p.id ?? "", 16))
          .find((h) => Number.isInteger(h) && h <= state.height);
        if (found === undefined)
          error = { code: 1000, message: "No intersection found.", data: { tip: ogmiosPoint(state.height) } };
        else result = { intersection: ogmiosPoint(found), tip: ogmiosPoint(state.height) };
      } else if (call.method === "releaseLedgerState") {
        acquired = undefined;
        result = { released: "ledgerState" };
      } else if (call.method === "nextBlock") {
        result = {
          direction: "forward",
          block: { type: "praos", era: "conway", ...ogmiosPoint(height), height },
          tip: ogmiosPoint(state.height),
        };
      } else if (call.method === "queryNetwork/blockHeight") result = state.height;
      else result = LEDGER[call.method]?.(height);
      const answer =
        error !== undefined
          ? { error }
          : result === undefined
            ? {
                error: {
                  code: -32601,
                  message: "Invalid request: unknown method in 'method' (beware names are case-sensitive).",
                },
              }
            : { result };
      socket.send(JSON.stringify({ jsonrpc: "2.0", method: call.method, ...answer, id: call.id }));
    });
  });
  return {
    ...node,
    wsMessages,
    hold: (method, until) => {
      held.set(method, until);
    },
    close: async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      await node.close();
    },
  };
}
