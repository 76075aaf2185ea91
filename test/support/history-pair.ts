import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "./eventually.js";
import { type RunningGateway, startGateway } from "./gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "./loopback-node.js";
import { nodeState, softwareNode } from "./software-node.js";

/** The head both nodes are at: far past any history expiry's window. */
export const HISTORY_HEIGHT = 20_000_000;

/** A full node past its history expiry and an archive node behind one gateway's `eth` and `eth-archive`. */
export interface HistoryPair {
  readonly full: LoopbackNode;
  readonly archive: LoopbackNode;
  readonly gw: RunningGateway;
  /** How many times `node` was asked the pair's method. */
  asked(node: LoopbackNode): number;
  close(): Promise<void>;
}

const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

/**
 * `method` as a full node past EIP-4444's history expiry answers it (code 4444, `refusal` as its software
 * words it: geth and Reth "pruned history unavailable", Nethermind and Besu "Pruned history unavailable"),
 * and as an archive node does (`result`); every other call as geth answers at HISTORY_HEIGHT. Resolves once
 * both labels serve that head.
 */
export async function startHistoryPair(
  method: string,
  refusal: string,
  result: unknown,
): Promise<HistoryPair> {
  const answers =
    (pruned: boolean): Responder =>
    (request) => {
      if (request.method !== "POST" || !request.body.includes(`"${method}"`)) return undefined;
      const { id } = JSON.parse(request.body) as { id: unknown };
      return {
        body: pruned
          ? { jsonrpc: "2.0", id, error: { code: 4444, message: refusal } }
          : { jsonrpc: "2.0", id, result },
      };
    };
  const node = (label: string, pruned: boolean) =>
    startLoopbackNode(
      firstOf(answers(pruned), softwareNode(endpoint(label), nodeState(endpoint(label), HISTORY_HEIGHT))),
    );
  const [full, archive] = await Promise.all([node("eth", true), node("eth-archive", false)]);
  const gw = await startGateway({
    upstreams: {
      eth: [{ url: full.url, name: "full" }],
      "eth-archive": [{ url: archive.url, name: "archive" }],
    },
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
  });
  await eventually(
    () => gw.gateway.upstreams.groups().every((g) => g.served.height === HISTORY_HEIGHT),
    5_000,
    "both labels' heads served",
  );
  return {
    full,
    archive,
    gw,
    asked: (n) => n.requests.filter((r) => r.body.includes(`"${method}"`)).length,
    async close() {
      await gw.close();
      await Promise.all([full.close(), archive.close()]);
    },
  };
}
