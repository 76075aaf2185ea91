import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import type { TypicalAnswer } from "../support/typical-calls.js";
import { Client } from "../support/ws-client.js";

// What a user could see if the cache kept archive answers as any other: a key without archive access
// served an archive node's old state from the cache. cache-archive.test.ts shows the EVM case with anvil;
// this one Substrate's state by block hash (a full node first, dot-archive once more) and nearcore's query
// (near-archive at once, or once more after GARBAGE_COLLECTED_BLOCK): kept for archive keys at the archive's
// price, ARCHIVE_REQUIRED for the rest, over HTTP and over a WebSocket.
const WINDOW = 1_000;
const HEIGHT = 5_000_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;
const substrateHash = (height: number) => `0x${(height + 0xabc0_0000).toString(16).padStart(64, "0")}`;
const heightOfSubstrateHash = (hash: unknown) => Number.parseInt(String(hash).slice(2), 16) - 0xabc0_0000;
const storage = (pruned: boolean): TypicalAnswer => ({
  result: () => (pruned ? "0x0100" : "0x0200"),
  ...(pruned
    ? {
        missing: (s: NodeState, p?: unknown) =>
          heightOfSubstrateHash((p as unknown[])[1]) < s.height - WINDOW,
      }
    : {}),
});
const query = (pruned: boolean): TypicalAnswer => ({
  result: (state, params) => ({
    amount: pruned ? "1" : "2",
    block_height: (params as { block_id?: number }).block_id ?? state.height,
    block_hash: "5mzY6JkVd2zK8T9HxR3o4bM5fN7qW2eY1uP9aS3dF6gH",
  }),
  ...(pruned
    ? {
        missing: (s: NodeState, p?: unknown) => {
          const id = (p as { block_id?: unknown }).block_id;
          return typeof id === "number" && id < s.height - WINDOW;
        },
      }
    : {}),
});

describe("cache and tiers on dot and near", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;
  let restore: () => void;
  beforeAll(async () => {
    restore = resolveTestHosts();
    for (const label of ["dot", "dot-archive", "near", "near-archive"]) {
      const e = endpoint(label);
      const pruned = !label.endsWith("-archive");
      nodes.set(
        label,
        await startLoopbackNode(
          softwareNode(e, nodeState(e, HEIGHT), [""], {
            answers: { state_getStorage: storage(pruned), query: query(pruned) },
          }),
        ),
      );
    }
    gw = await startGateway({
      upstreams: Object.fromEntries(
        [...nodes].map(([label, node]) => [label, [{ url: node.url, name: label }]]),
      ),
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await eventually(
      () => gw.gateway.upstreams.groups().every((g) => g.served.height === HEIGHT),
      5000,
      "heads",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
    restore?.();
  });
  const rpc = (label: string, key: string, method: string, params: unknown) =>
    gw.call(label, `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method, params }),
      headers: { "content-type": "application/json" },
    });

  it("dot: archive answer cached for archive keys only, priced as archive", async () => {
    const params = ["0x26aa", substrateHash(HEIGHT - 5_000)];
    const a = await rpc("dot", KEYS.all, "state_getStorage", params);
    expect(a.json).toMatchObject({ result: "0x0200" });
    expect(a.headers["x-upstream-tier"]).toBe("archive");
    expect(a.headers["x-compute-units"]).toBe("40");
    const b = await rpc("dot", KEYS.all, "state_getStorage", params);
    expect(b.json).toMatchObject({ result: "0x0200" });
    const c = await rpc("dot", KEYS.noArchive, "state_getStorage", params);
    expect(c.status).toBe(403);
    expect(c.text).not.toContain("0x0200");
  });

  it("near: archive answer (direct) cached for archive keys only; noArchive refused", async () => {
    const params = { request_type: "view_account", account_id: "a.near", block_id: HEIGHT - 300_000 };
    const a = await rpc("near", KEYS.all, "query", params);
    expect(a.json).toMatchObject({ result: { amount: "2" } });
    expect(a.headers["x-compute-units"]).toBe("40");
    const c = await rpc("near", KEYS.noArchive, "query", params);
    expect(c.status).toBe(403);
    const gc = { ...params, block_id: HEIGHT - 5_000 };
    const d = await rpc("near", KEYS.all, "query", gc);
    expect(d.json).toMatchObject({ result: { amount: "2" } });
    const e = await rpc("near", KEYS.noArchive, "query", gc);
    expect(e.status).toBe(403);
    const ws = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    expect(JSON.stringify(await ws.call("query", gc))).toContain("ARCHIVE_REQUIRED");
    ws.close();
  });
});
