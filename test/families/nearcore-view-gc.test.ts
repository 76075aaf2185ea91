import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// nearcore's query request types as methods of their own (EXPERIMENTAL_view_account, _view_code,
// _view_state, _view_access_key, _view_access_key_list, _call_function) have error types without a
// GarbageCollectedBlock variant: a block a non-archival node garbage-collected is an INTERNAL_ERROR at HTTP
// 500 whose only trace of it is its text, "The data for block #<n> is garbage collected on this node, use an
// archival node to fetch historical data" (chain/jsonrpc-primitives types/view_account.rs and the others,
// From<RpcQueryError>; errors.rs new_internal_or_handler_error). The registry reads that 500 as the node's
// answer (near `nodeErrors`) and its text as a missing state (`reads.archive.missingState`): the read goes
// to near-archive, or is ARCHIVE_REQUIRED. Before, the caller got the 500 (or the gateway's failure), and the
// full node was counted as failing for an answer about the call.

const WINDOW = 1_000;
const HEIGHT = 5_000_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

const viewAccount = (pruned: boolean): TypicalAnswer => ({
  result: (state, params) => ({
    amount: "1000000000000000000000000",
    locked: "0",
    code_hash: "11111111111111111111111111111111",
    storage_usage: 182,
    storage_paid_at: 0,
    block_height: (params as { block_id?: number }).block_id ?? state.height,
    block_hash: "5mzY6JkVd2zK8T9HxR3o4bM5fN7qW2eY1uP9aS3dF6gH",
  }),
  ...(pruned
    ? {
        missing: (state: NodeState, params?: unknown) => {
          const id = (params as { block_id?: unknown }).block_id;
          return typeof id === "number" && id < state.height - WINDOW;
        },
      }
    : {}),
});

describe("EXPERIMENTAL_view_account at a block a non-archival nearcore garbage-collected", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;

  const rpc = (key: string, params: unknown) =>
    gw.call("near", `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "EXPERIMENTAL_view_account", params }),
      headers: { "content-type": "application/json" },
    });

  beforeAll(async () => {
    for (const label of ["near", "near-archive"]) {
      const e = endpoint(label);
      const answers = { EXPERIMENTAL_view_account: viewAccount(label === "near") };
      nodes.set(label, await startLoopbackNode(softwareNode(e, nodeState(e, HEIGHT), [""], { answers })));
    }
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
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });

  const gc = { account_id: "gateway.near", block_id: HEIGHT - 5_000 };

  it("the non-archival node's own answer: INTERNAL_ERROR at HTTP 500, GARBAGE_COLLECTED_BLOCK nowhere", async () => {
    const r = await fetch(nodes.get("near")?.url as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "EXPERIMENTAL_view_account", params: gc }),
    });
    expect(r.status).toBe(500);
    const why = `The data for block #${HEIGHT - 5_000} is garbage collected on this node, use an archival node to fetch historical data`;
    expect(await r.json()).toEqual({
      jsonrpc: "2.0",
      error: {
        name: "INTERNAL_ERROR",
        cause: { name: "INTERNAL_ERROR", info: { error_message: why } },
        code: -32000,
        message: "Server error",
        data: `The node reached its limits. Try again later. More details: ${why}`,
      },
      id: 1,
    });
  });

  it("an archive key: read from near-archive once more, the full node kept in rotation", async () => {
    const r = await rpc(KEYS.all, gc);
    expect(r.json, r.text).toMatchObject({ id: 9, result: { block_height: HEIGHT - 5_000 } });
    expect(r.headers["x-upstream-tier"]).toBe("archive");
    expect(gw.gateway.upstreams.group("near", "/")?.members[0]?.health.inRotation).toBe(true);
  });

  it("a key without archive access: ARCHIVE_REQUIRED, not the node's 500", async () => {
    const r = await rpc(KEYS.noArchive, gc);
    expect(r.json, r.text).toMatchObject({ error: { code: -32045, data: { archiveLabel: "near-archive" } } });
  });
});
