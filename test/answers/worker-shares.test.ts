import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { killChild } from "../support/child-process.js";
import { eventually } from "../support/eventually.js";
import { startFleetProxy } from "../support/fleet.js";
import { KEYS, TEST_KEYS } from "../support/gateway.js";

// A proxy of two workers without Redis (src/proxy/cluster-shares.ts, cluster-store.ts): a caller whose
// calls come on new connections lands on either worker, as ethers' and viem's polls over HTTP do. Each
// worker probes the two anvils once a minute, so what one worker learnt from an answer the other has
// not: without their primary between them, the second served a head below the first's, and polled a
// filter the first made on the node that never made it.

const DOMAIN = "gw.test";
const GENESIS = 1_700_000_000;
const CALLS = 12;

interface Upstreams {
  processes: {
    labels: { label: string; servedHead: number | null; upstreams: { state: string }[] }[];
  }[];
}

describe("a cluster's workers share heads and filters through their primary", () => {
  let nodes: Anvil[];
  let child: ChildProcess;
  let dir: string;
  let port = 0;
  let operatorPort = 0;

  /** One call on a connection of its own: the cluster hands each new connection to the next worker. */
  const rpc = async (method: string, params: unknown[] = []) => {
    const r = await request(`http://127.0.0.1:${port}/${KEYS.all}/`, {
      method: "POST",
      headers: { host: `eth.${DOMAIN}`, "content-type": "application/json", connection: "close" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return (await r.body.json()) as { result?: unknown; error?: { code: number; message: string } };
  };

  /** Each worker's served head of eth (GET /upstreams). */
  const servedHeads = async () => {
    const r = await request(`http://127.0.0.1:${operatorPort}/upstreams`);
    const { processes } = (await r.body.json()) as Upstreams;
    return processes.map((p) => p.labels.find((l) => l.label === "eth")?.servedHead);
  };

  beforeAll(async () => {
    const chain = { sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 };
    nodes = await Promise.all([startAnvil(chain), startAnvil(chain)]);
    for (const node of nodes) await node.rpc("evm_mine", [GENESIS + 12]);
    dir = mkdtempSync(join(tmpdir(), "gateway-worker-shares-"));
    const config = join(dir, "deployment.yaml");
    writeFileSync(
      config,
      [
        `domain: ${DOMAIN}`,
        "listen: { host: 127.0.0.1, port: 0 }",
        "operator: { listen: { host: 127.0.0.1, port: 0 } }",
        "workers: 2",
        `upstreams: { eth: [${nodes.map((n, i) => `{ url: "${n.url}", name: anvil-${i} }`).join(", ")}] }`,
        // one probe at the start: after it, a worker learns a node's head from that node's answers alone
        "health: { probeIntervalMs: 60000 }",
        // every call reaches a node: what is measured is the workers' choice, not the answer cache
        "cache: { enabled: false }",
        "log: { level: info, access: false }",
        `keys: [{ key: ${TEST_KEYS[0]?.key}, networks: "*" }]`,
      ].join("\n"),
    );
    ({ child, port, operatorPort } = await startFleetProxy(config));
    // both workers have probed both nodes: each node in rotation, at block 1, in each worker
    await eventually(
      async () => {
        const r = await request(`http://127.0.0.1:${operatorPort}/upstreams`);
        const { processes } = (await r.body.json()) as Upstreams;
        return (
          processes.length === 2 &&
          processes.every((p) =>
            p.labels
              .find((l) => l.label === "eth")
              ?.upstreams.every((u) => u.state === "healthy" || u.state === "in rotation"),
          )
        );
      },
      20_000,
      "both nodes in rotation in both workers",
    );
  }, 60_000);

  afterAll(async () => {
    await killChild(child, "SIGTERM");
    await Promise.all((nodes ?? []).map((n) => n.stop()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("a head one worker served, the other never serves below", async () => {
    // one node a block ahead, which neither worker's prober has read: its first answer is news
    await nodes[0]?.rpc("evm_mine", [GENESIS + 24]);
    const heads: number[] = [];
    while (!heads.includes(2) && heads.length < CALLS)
      heads.push(Number((await rpc("eth_blockNumber")).result));
    expect(heads, "a worker served block 2").toContain(2);
    // one worker served it; the other, which has neither answered nor probed it, knows it from the primary
    await eventually(
      async () => (await servedHeads()).every((h) => h === 2),
      5_000,
      "both workers' served head at 2",
    );
    // so every later read, on either worker, waits for a node at block 2 rather than answer block 1
    const later: number[] = [];
    for (let i = 0; i < CALLS; i++) later.push(Number((await rpc("eth_blockNumber")).result));
    expect(later).toEqual(later.map(() => 2));
  });

  it("a filter made through one worker is polled on its node through the other", async () => {
    const made = await rpc("eth_newBlockFilter");
    expect(made.error).toBeUndefined();
    const polls = [];
    for (let i = 0; i < CALLS; i++) polls.push(await rpc("eth_getFilterChanges", [made.result]));
    // "filter not found" from the node that did not make it, on about every other poll, before
    expect(polls.filter((p) => p.error !== undefined)).toEqual([]);
  });
});
