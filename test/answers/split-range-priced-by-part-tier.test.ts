import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH, DEFAULT_PLANS, PLAN_FIELDS } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A full node that dropped old history (geth past EIP-4444: eth_getLogs below it answers {"code":4444,
// "message":"pruned history unavailable"}) beside an archive node, both real anvils with the same 300 blocks.
// A log range split into three parts (splitAbove 100), two of which the full node refuses and the archive
// node answers: docs/plans.md prices a split "a call per part" and an archive node's answer at the archive
// factor, so 2 × 150 + 75 for eth_getLogs at 75, whichever part finishes last. Each part went by tier with
// the request's one note, so the last to finish set the price (225 or 450), and the label its archive part
// named stayed in the access line whatever the tier.

const KEY = "FNsplitTierPriced000000000000000";
const PRUNED_BELOW = 200;

describe("a split eth_getLogs answered in part by the archive tier (real anvil)", () => {
  let full: Anvil;
  let archive: Anvil;
  let front: Server;
  let gw: RunningGateway;
  const asked: { from: number; to: number }[] = [];
  /** How long the full node takes to refuse a pruned range, and to answer one it has. */
  let refuseDelayMs = 0;
  let answerDelayMs = 0;

  beforeAll(async () => {
    [full, archive] = await Promise.all([startAnvil({ chainId: 1 }), startAnvil({ chainId: 1 })]);
    await Promise.all([full.rpc("anvil_mine", ["0x12c"]), archive.rpc("anvil_mine", ["0x12c"])]);
    front = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const call = JSON.parse(body) as {
          id: unknown;
          method: string;
          params: { fromBlock: string; toBlock: string }[];
        };
        if (!Array.isArray(call) && call.method === "eth_getLogs") {
          const from = Number(call.params[0]?.fromBlock);
          asked.push({ from, to: Number(call.params[0]?.toBlock) });
          const refused = from < PRUNED_BELOW;
          await new Promise((resolve) => setTimeout(resolve, refused ? refuseDelayMs : answerDelayMs));
          if (refused) {
            res.writeHead(200, { "content-type": "application/json" });
            const error = { code: 4444, message: "pruned history unavailable" };
            res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, error }));
            return;
          }
        }
        const answer = await fetch(full.url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(await answer.text());
      });
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    gw = await startGateway({
      upstreams: {
        eth: [{ url: `http://127.0.0.1:${(front.address() as AddressInfo).port}`, name: "full" }],
        "eth-archive": [{ url: archive.url, name: "archive" }],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      plans: {
        ...DEFAULT_PLANS,
        tested: { ...PLAN_FIELDS, computeUnitRate: { perSecond: 10_000, burst: 10_000 }, archive: true },
      },
      keys: [{ key: KEY, networks: "*", plan: "tested", rate: { perSecond: 1000, burst: 1000 } }],
      blockRanges: { eth: { eth_getLogs: { splitAbove: 100, refuseAbove: 5_000 } } },
    });
    await everyNodeInRotation(gw);
    await eventually(
      async () => (await gw.metric("gateway_upstream_head", { label: "eth" })) === 300,
      5000,
      "head",
    );
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await new Promise((resolve) => front?.close(resolve));
    await Promise.all([full?.stop(), archive?.stop()]);
  });

  const getLogs = async (from: string, to = "0x12c") => {
    asked.length = 0;
    const answer = await gw.call("eth", `/${KEY}`, {
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "eth_getLogs",
        params: [{ fromBlock: from, toBlock: to }],
      }),
    });
    const line = gw.logs.filter((l) => l.includes('"parts"')).at(-1) ?? "{}";
    return { answer, line: JSON.parse(line) as Record<string, unknown> };
  };

  it.each([
    ["its full part last", 0, 300],
    ["its archive parts last", 300, 0],
  ])(
    "two archive parts at 2×, one full part at 1×, %s: 375, under the label called",
    async (_, refuse, answer) => {
      [refuseDelayMs, answerDelayMs] = [refuse, answer];
      const { answer: got, line } = await getLogs("0x1");
      expect(got.json).toEqual({ jsonrpc: "2.0", id: 7, result: [] });
      // 1-100 and 101-200 refused by the full node and answered by the archive node, 201-300 by the full node
      expect(asked.map(({ from, to }) => [from, to]).sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0))).toEqual([
        [1, 100],
        [101, 200],
        [201, 300],
      ]);
      expect(Number(got.headers["x-compute-units"])).toBe(375);
      expect(got.headers["x-upstream-tier"]).toBe("full+archive");
      expect(line).toMatchObject({ label: "eth", tier: "archive", parts: 3, cu: 375 });
    },
  );

  it("every part from the archive: 2 × 150, under the archive label", async () => {
    [refuseDelayMs, answerDelayMs] = [0, 0];
    const { answer, line } = await getLogs("0x1", "0xc8");
    expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: [] });
    expect(asked).toHaveLength(2);
    expect(Number(answer.headers["x-compute-units"])).toBe(300);
    expect(answer.headers["x-upstream-tier"]).toBe("archive");
    expect(line).toMatchObject({ label: "eth-archive", tier: "archive", parts: 2, cu: 300 });
  });
});
