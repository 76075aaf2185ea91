import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS } from "../support/gateway.js";
import { incomingCalls, NodeRejection } from "../support/node-software.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// The CKB indexer's get_cells(search_key, order, limit, after_cursor) and get_transactions take a `limit`
// (a hex Uint32) that the node caps only when its operator sets `request_limit` (nervosnetwork/ckb
// util/indexer/src/service.rs: unset, it is usize::MAX; set, "limit must be less than N"; limit 0 is "limit
// should be greater than 0"). Its resource/ckb.toml: serde's JSON of a page takes some ten times its size in
// memory and "may cause the physical machine to become unresponsive": 400 is recommended.
// shared/reference upstream-interfaces.md (CKB): "enforce a max `limit` at the gateway". A limit of
// 0xffffffff went to the node.

const H = 15_000_000;
const SEARCH_KEY = {
  script: {
    code_hash: "0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8",
    hash_type: "type",
    args: "0x8211f1b938a107cd53b6302cc752a6fc3965638d",
  },
  script_type: "lock",
};

/** The node as service.rs answers with no request_limit: any limit but 0, an empty page. */
function page(_state: unknown, params: unknown): unknown {
  const limit = (params as unknown[])[2];
  if (limit === "0x0") throw new NodeRejection(-32602, "Invalid params: limit should be greater than 0");
  return { objects: [], last_cursor: "0x" };
}

describe("ckb: the indexer's page size is held to the registry's limit", () => {
  let apart: NodesBlockApart;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "ckb",
      H,
      softwareWith({ get_cells: { result: page }, get_transactions: { result: page } }),
    );
  });
  afterAll(async () => apart?.close());

  const send = (body: unknown) =>
    apart.gw.call("ckb", `/${KEYS.all}/`, {
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
  const asked = () =>
    apart.nodes
      .flatMap((node) => node.requests)
      .flatMap((request) => incomingCalls(request)?.calls ?? [])
      .filter((call) => call.method === "get_cells" || call.method === "get_transactions")
      .map((call) => [call.method, (call.params as unknown[])[2]]);

  it("a limit above 400 is refused PAGE_TOO_LARGE and reaches no node; 400 goes", async () => {
    for (const node of apart.nodes) node.requests.length = 0;
    for (const [method, limit, size] of [
      ["get_cells", "0xffffffff", 4_294_967_295],
      ["get_transactions", "0x191", 401],
    ] as const) {
      const got = await send({ jsonrpc: "2.0", id: 5, method, params: [SEARCH_KEY, "asc", limit] });
      expect(got.status, method).toBe(413);
      expect(got.json).toMatchObject({
        id: 5,
        error: { code: -32005, data: { code: "PAGE_TOO_LARGE", method, size, refuseAbove: 400 } },
      });
    }
    // in a batch, that call alone
    const batch = await send([
      { jsonrpc: "2.0", id: 1, method: "get_cells", params: [SEARCH_KEY, "asc", "0x10000"] },
      { jsonrpc: "2.0", id: 2, method: "get_cells", params: [SEARCH_KEY, "asc", "0x190"] },
    ]);
    const answers = [...(batch.json as { id: number }[])].sort((a, b) => a.id - b.id);
    expect(answers).toEqual([
      expect.objectContaining({ id: 1, error: expect.objectContaining({ code: -32005 }) }),
      { jsonrpc: "2.0", id: 2, result: { objects: [], last_cursor: "0x" } },
    ]);
    expect(asked()).toEqual([["get_cells", "0x190"]]);
  });
});
