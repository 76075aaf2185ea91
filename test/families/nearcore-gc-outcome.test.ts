import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nearBlockReads, nearOutcomeReads, nearTxHash } from "../support/sdk-nodes.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A non-archival nearcore node garbage-collects a transaction's outcome with its block, and then answers
// `tx` and `EXPERIMENTAL_tx_status` for it as for one that never was: UNKNOWN_TRANSACTION
// (RpcTransactionError::UnknownTransaction, chain/jsonrpc-primitives types/transactions.rs), and
// `light_client_proof` UNKNOWN_TRANSACTION_OR_RECEIPT (RpcLightClientProofError, types/light_client.rs).
// The loopback nearcore (sdk-nodes.ts nearOutcomeReads) answers so. For a key with archive access such an
// answer is asked once more of near-archive, whose answer the caller gets; a key without archive access
// gets the node's own answer, which may be true, never ARCHIVE_REQUIRED.

const WINDOW = 1_000;
const HEIGHT = 5_000_000;
const OLD = nearTxHash(HEIGHT - 5_000);
const RECENT = nearTxHash(HEIGHT - 10);
// a transaction no node has: a hash of no block here
const NONE = "4UVkS3HTrkwAUiLsyJwWjsLANbBHu8G3qtBEp2czmCQ9";
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

describe("nearcore's outcome of a transaction a non-archival node garbage-collected", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;
  let restore: () => void = () => {};

  /** The outcome lookups of `method` a node received. */
  const calls = (label: string, method: string) =>
    (nodes.get(label)?.requests ?? []).filter((r) => r.body.includes(`"method":"${method}"`)).length;
  const rpc = (key: string, body: unknown) =>
    gw.call("near", `/${key}`, {
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
  const call = (key: string, method: string, params: unknown) =>
    rpc(key, { jsonrpc: "2.0", id: 9, method, params });

  beforeAll(async () => {
    for (const label of ["near", "near-archive"]) {
      const e = endpoint(label);
      const keeps = label === "near" ? WINDOW : "archive";
      const answers = { ...nearBlockReads(keeps), ...nearOutcomeReads(keeps) };
      nodes.set(label, await startLoopbackNode(softwareNode(e, nodeState(e, HEIGHT), [""], { answers })));
    }
    restore = resolveTestHosts();
    gw = await startGateway({
      upstreams: Object.fromEntries(
        [...nodes].map(([label, node]) => [label, [{ url: node.url, name: label }]]),
      ),
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      () => gw.gateway.upstreams.groups().every((g) => g.served.height === HEIGHT),
      5000,
      "every label's served head from its first probe",
    );
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });

  it("the non-archival node's own answer: UNKNOWN_TRANSACTION, at HTTP 200", async () => {
    const r = await fetch(nodes.get("near")?.url as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tx", params: [OLD, "sender.near"] }),
    });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      jsonrpc: "2.0",
      error: {
        name: "HANDLER_ERROR",
        cause: { info: { requested_transaction_hash: OLD }, name: "UNKNOWN_TRANSACTION" },
        code: -32000,
        message: "Server error",
        data: `Transaction ${OLD} doesn't exist`,
      },
      id: 1,
    });
  });

  for (const [method, params, found] of [
    ["tx", [OLD, "sender.near"], { transaction: { hash: OLD } }],
    [
      "EXPERIMENTAL_tx_status",
      { tx_hash: OLD, sender_account_id: "sender.near" },
      { transaction: { hash: OLD } },
    ],
    [
      "light_client_proof",
      { type: "transaction", transaction_hash: OLD, sender_id: "sender.near", light_client_head: "x" },
      { outcome_proof: { id: OLD } },
    ],
  ] as const) {
    it(`${method}: read from near-archive once more; a key without archive access gets the node's answer`, async () => {
      const archive = calls("near-archive", method);
      const r = await call(KEYS.all, method, params);
      expect(r.status, r.text).toBe(200);
      expect(r.json, r.text).toMatchObject({ id: 9, result: found });
      expect(r.headers["x-upstream-tier"]).toBe("archive");
      expect(calls("near-archive", method)).toBe(archive + 1);
      const relayed = await call(KEYS.noArchive, method, params);
      expect(relayed.status, relayed.text).toBe(200);
      expect(relayed.json, relayed.text).toMatchObject({
        id: 9,
        error: { name: "HANDLER_ERROR", code: -32000 },
      });
      expect(relayed.text).toMatch(/UNKNOWN_TRANSACTION/);
      expect(calls("near-archive", method)).toBe(archive + 1);
    });
  }

  // a wallet polling `tx` for a transaction it just sent asks of one no node has yet, again and again: the
  // archive is asked, and the answer stays the full node's, at its price (docs/upstreams.md)
  it("one no node has: near-archive asked once, the full node's answer at the full tier's price; a kept one is the full node's", async () => {
    const archive = calls("near-archive", "tx");
    const none = await call(KEYS.all, "tx", [NONE, "sender.near"]);
    expect(none.json, none.text).toMatchObject({ error: { cause: { name: "UNKNOWN_TRANSACTION" } } });
    expect(none.headers["x-upstream-tier"]).toBe("full");
    const recentPrice = (await call(KEYS.all, "tx", [RECENT, "sender.near"])).headers["x-compute-units"];
    expect(none.headers["x-compute-units"]).toBe(recentPrice);
    expect(calls("near-archive", "tx")).toBe(archive + 1);
    const recent = await call(KEYS.all, "tx", [RECENT, "sender.near"]);
    expect(recent.json, recent.text).toMatchObject({ result: { transaction: { hash: RECENT } } });
    expect(recent.headers["x-upstream-tier"]).toBe("full");
    expect(calls("near-archive", "tx")).toBe(archive + 1);
  });

  it("over a WebSocket (nearcore has no WebSocket server: each message goes over HTTP), the same", async () => {
    // an outcome holds `id` members of its own before the call's: the answer is found by its parsed id
    const ask = async (key: string) => {
      const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${key}`);
      try {
        client.send(JSON.stringify({ jsonrpc: "2.0", id: 77, method: "tx", params: [OLD, "sender.near"] }));
        return JSON.parse(await client.waitFor((t) => JSON.parse(t).id === 77)) as Record<string, unknown>;
      } finally {
        client.close();
      }
    };
    const archive = calls("near-archive", "tx");
    expect(await ask(KEYS.all)).toMatchObject({ result: { transaction: { hash: OLD } } });
    expect(calls("near-archive", "tx")).toBe(archive + 1);
    expect(await ask(KEYS.noArchive)).toMatchObject({
      error: { code: -32000, cause: { name: "UNKNOWN_TRANSACTION" } },
    });
    expect(calls("near-archive", "tx")).toBe(archive + 1);
  });
});
