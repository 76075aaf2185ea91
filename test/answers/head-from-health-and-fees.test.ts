import { rpc } from "@stellar/stellar-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { sdkUrl, useTestHostsForGlobalFetch } from "../sdk/resolve.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { stellarLatestLedger } from "../support/sdk-stellar-ledger.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// What a user saw: stellar-sdk's getLatestLedger() answered ledger 1000, a ledger closed, getHealth() (or
// getFeeStats()) showed latestLedger 1001, and getLatestLedger() then answered 1000 again (its answer kept
// for the label's head). stellar-rpc's getHealth answers {status, latestLedger, oldestLedger,
// ledgerRetentionWindow} (methods/health.go), getFeeStats {sorobanInclusionFee, inclusionFee, latestLedger}
// (methods/get_fee_stats.go): each names the node's newest ledger, which the label's served head learns
// (registry `heightIn`). @stellar/stellar-sdk's rpc.Server, unmodified, against two stellar-rpc loopback
// nodes behind `xlm`, answer cache on.

const H = 58_000_000;
const fee = {
  max: "100",
  min: "100",
  mode: "100",
  p10: "100",
  p20: "100",
  p30: "100",
  p40: "100",
  p50: "100",
  p60: "100",
  p70: "100",
  p80: "100",
  p90: "100",
  p95: "100",
  p99: "100",
  transactionCount: "7",
  ledgerCount: 50,
};
const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  getLatestLedger: { result: ({ height }) => stellarLatestLedger(height) },
  getHealth: {
    result: ({ height }) => ({
      status: "healthy",
      latestLedger: height,
      oldestLedger: height - 120_959,
      ledgerRetentionWindow: 120_960,
    }),
  },
  getFeeStats: {
    result: ({ height }) => ({ sorobanInclusionFee: fee, inclusionFee: fee, latestLedger: height }),
  },
};

/** Two stellar-rpc loopback nodes at H behind `xlm`, a gateway before them, and stellar-sdk's server of it. */
function twoNodes(): { readonly states: NodeState[]; server: () => rpc.Server } {
  const nodes: LoopbackNode[] = [];
  const states: NodeState[] = [];
  let gw: RunningGateway;
  let restoreFetch: () => Promise<void>;
  let restoreLookup: () => void;
  let client: rpc.Server;

  beforeAll(async () => {
    restoreFetch = useTestHostsForGlobalFetch();
    restoreLookup = resolveTestHosts();
    const endpoint = endpointsByLabel.get("xlm") as Endpoint;
    for (let i = 0; i < 2; i++) {
      const state = nodeState(endpoint, H);
      states.push(state);
      nodes.push(await startLoopbackNode(softwareNode(endpoint, () => state, [""], { answers: EXTRA })));
    }
    gw = await startGateway({
      upstreams: { xlm: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
    client = new rpc.Server(sdkUrl(gw, "xlm"), { allowHttp: true });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
    restoreLookup?.();
    await restoreFetch?.();
  });
  return { states, server: () => client };
}

describe("stellar-sdk: getHealth() shows a newer ledger than a kept getLatestLedger()", () => {
  const { states, server } = twoNodes();

  it("getLatestLedger(), a ledger closes, getHealth() shows it, getLatestLedger() again", async () => {
    const seen = [(await server().getLatestLedger()).sequence];
    for (const s of states) s.height += 1;
    seen.push((await server().getHealth()).latestLedger);
    seen.push((await server().getLatestLedger()).sequence);
    expect(seen).toEqual([H, H + 1, H + 1]);
  });
});

describe("stellar-sdk: getFeeStats() shows a newer ledger than a kept getLatestLedger()", () => {
  const { states, server } = twoNodes();

  it("getLatestLedger(), a ledger closes, getFeeStats() shows it, getLatestLedger() again", async () => {
    const seen = [(await server().getLatestLedger()).sequence];
    for (const s of states) s.height += 1;
    seen.push((await server().getFeeStats()).latestLedger);
    seen.push((await server().getLatestLedger()).sequence);
    expect(seen).toEqual([H, H + 1, H + 1]);
  });
});
