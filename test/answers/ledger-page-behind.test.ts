import { rpc, xdr } from "@stellar/stellar-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { sdkUrl, useTestHostsForGlobalFetch } from "../sdk/resolve.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection, type NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { stellarLatestLedger } from "../support/sdk-stellar-ledger.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// What a user saw: a stellar-sdk ledger scanner read the latest ledger (getLatestLedger: 1001) and then the
// ledgers from one it had (getLedgers({startLedger: 1000})), and half the pages came back without ledger
// 1001 and with latestLedger 1000: the page went to a node a ledger behind. A page reads on from its
// startLedger to the node's latest, which its answer names: it is a read at the head too (registry
// `atHead`), besides needing its startLedger. @stellar/stellar-sdk's rpc.Server, unmodified, against two
// stellar-rpc loopback nodes behind `xlm` one ledger apart (as the prober read them: both in rotation),
// answer cache on.
//
// stellar-rpc's getLedgers (cmd/stellar-rpc/internal/methods/get_ledgers.go): startLedger must be within
// the node's [oldest, latest] range (else invalid params); it answers up to `limit` ledgers from startLedger
// that the node has, each {hash, sequence, ledgerCloseTime, headerXdr (LedgerHeaderHistoryEntry),
// metadataXdr (LedgerCloseMeta)}, with latestLedger, latestLedgerCloseTime, oldestLedger,
// oldestLedgerCloseTime of its own range, and the last ledger's sequence as the cursor.

const H = 58_100_000;
const KEPT = 120_960;

function ledgerInfo(sequence: number) {
  const latest = stellarLatestLedger(sequence) as { id: string; metadataXdr: string; closeTime: string };
  const meta = xdr.LedgerCloseMeta.fromXDR(latest.metadataXdr, "base64");
  return {
    hash: latest.id,
    sequence,
    ledgerCloseTime: latest.closeTime,
    headerXdr: meta.v2().ledgerHeader().toXDR("base64"),
    metadataXdr: latest.metadataXdr,
  };
}

const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  getLatestLedger: { result: ({ height }) => stellarLatestLedger(height) },
  getLedgers: {
    result: ({ height }, params) => {
      const { startLedger = 0, pagination = {} } = (params ?? {}) as {
        startLedger?: number;
        pagination?: { limit?: number };
      };
      const oldest = height - KEPT + 1;
      if (startLedger < oldest || startLedger > height)
        throw new NodeRejection(
          -32602,
          `start ledger must be between the oldest ledger: ${oldest} and the latest ledger: ${height} for this rpc instance.`,
        );
      const ledgers = [];
      for (let n = startLedger; n <= height && ledgers.length < (pagination.limit ?? 50); n++)
        ledgers.push(ledgerInfo(n));
      return {
        ledgers,
        latestLedger: height,
        latestLedgerCloseTime: 1_737_574_725,
        oldestLedger: oldest,
        oldestLedgerCloseTime: 1_736_970_000,
        cursor: String(ledgers[ledgers.length - 1]?.sequence),
      };
    },
  },
};

describe("stellar-sdk: getLatestLedger() then getLedgers() from a ledger before it, nodes one ledger apart", () => {
  const nodes: LoopbackNode[] = [];
  const states: NodeState[] = [];
  let gw: RunningGateway;
  let restoreFetch: () => Promise<void>;
  let restoreLookup: () => void;
  let server: rpc.Server;

  beforeAll(async () => {
    restoreFetch = useTestHostsForGlobalFetch();
    restoreLookup = resolveTestHosts();
    const endpoint = endpointsByLabel.get("xlm") as Endpoint;
    for (let i = 0; i < 2; i++) {
      // the first node a ledger ahead, as the prober reads them: both healthy, in rotation
      const state = nodeState(endpoint, i === 0 ? H + 1 : H);
      states.push(state);
      nodes.push(await startLoopbackNode(softwareNode(endpoint, () => state, [""], { answers: EXTRA })));
    }
    gw = await startGateway({
      upstreams: { xlm: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
    server = new rpc.Server(sdkUrl(gw, "xlm"), { allowHttp: true });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
    restoreLookup?.();
    await restoreFetch?.();
  });

  it("every getLedgers() answer after the head call showed H + 1 holds H + 1 and says so", async () => {
    expect((await server.getLatestLedger()).sequence).toBe(H + 1);
    const wrong: string[] = [];
    for (let i = 0; i < 8; i++) {
      // a page size of its own each time, as a scanner that adapts its pages would: no two the same read
      const page = await server.getLedgers({ startLedger: H, pagination: { limit: 5 + i } });
      const sequences = page.ledgers.map((l) => l.sequence);
      if (page.latestLedger < H + 1 || sequences.join() !== `${H},${H + 1}`)
        wrong.push(`latestLedger ${page.latestLedger}, ledgers [${sequences.join()}]`);
    }
    expect(wrong).toEqual([]);
  });
});
