import { describe, expect, it } from "vitest";
import { DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { keyHash } from "../../src/keys/digest.js";
import type { Principal } from "../../src/keys/types.js";
import { rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, startLoopbackNode } from "../support/loopback-node.js";

// A plan removed while keys hold it serves them on the shared plan's terms (docs/plans.md). Where those
// terms count the account's keys together (`quotaPer: account`), the removed plan's keys spent the quota of
// the account's shared-plan keys: a key of the old plan stopped the shared keys, while the dashboard's meter
// (control/accounts/overview.ts) and the quota a restart starts from (keys/quota-spent.ts) counted them
// apart, by the key's own plan. They spend their own plan's quota now, at the shared plan's numbers.
// eth_blockNumber costs 10 compute units (docs/compute-units.md).

const RATE = { perSecond: 10_000, burst: 10_000 };

describe("a removed plan's keys, on a shared plan whose quota is the account's", () => {
  it("spend a quota of their own plan's keys, not the account's shared-plan keys'", async () => {
    const node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x10" }));
    const key = (keyId: string, plan: string): Principal => ({
      keyId,
      quotaScope: keyId,
      accountId: "account:7",
      networks: "*",
      archive: false,
      plan,
      rate: RATE,
      rules: undefined,
    });
    const keys = new Map([
      ["FNrmShared00000000000000000000", key("FNrmShar", "shared")],
      ["FNrmGoneOne0000000000000000000", key("FNrmGone", "team")],
      ["FNrmGoneTwo0000000000000000000", key("FNrmGon2", "team")],
    ]);
    const byDigest = new Map([...keys].map(([k, principal]) => [keyHash(k), principal]));
    const shared: PlanSpec = {
      ...PLAN_FIELDS,
      computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
      dailyQuota: 30,
      quotaPer: "account",
    };
    // the `team` plan is gone from the config: its keys are served on the shared plan's terms
    const gw = await startGateway({
      upstreams: { eth: [node.url] },
      plans: { ...DEFAULT_PLANS, shared },
      keyStore: { lookup: (digest) => byDigest.get(digest) },
    });
    try {
      const send = (k: string) => gw.call("eth", `/${k}`, { body: rpcBody("eth_blockNumber") });
      for (let i = 0; i < 3; i++) expect((await send("FNrmGoneOne0000000000000000000")).status).toBe(200);
      // the old plan's keys spent 30 of their own quota, and share it
      const refused = await send("FNrmGoneTwo0000000000000000000");
      expect(refused.status).toBe(402);
      expect(refused.json).toMatchObject({ error: { data: { per: "account", limit: 30 } } });
      // the account's shared-plan key spent nothing: its quota is whole
      for (let i = 0; i < 3; i++) expect((await send("FNrmShared00000000000000000000")).status).toBe(200);
      expect((await send("FNrmShared00000000000000000000")).status).toBe(402);
    } finally {
      await gw.close();
      await node.close();
    }
  });
});
