import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A CKB script (a contract) is deployed as a cell's data: one send_transaction whose outputs_data carries
// the whole RISC-V binary, in hex. The CKB node's tx-pool takes a transaction of up to 512,000 bytes
// serialized (util/types/src/core/tx_pool.rs TRANSACTION_SIZE_LIMIT) in a body of up to 10 MiB (ckb.toml
// [rpc] max_request_body_size). A script of 200 KB, as a Rust one readily is, makes a body past the
// gateway's 256 KiB limit: it was refused BODY_TOO_LARGE.

const TX_HASH = `0x${"ab".repeat(32)}`;

/** A transaction that deploys `codeBytes` bytes of script as a cell's data, as ckb-cli and the SDKs send it. */
function deployBody(codeBytes: number): string {
  const tx = {
    version: "0x0",
    cell_deps: [],
    header_deps: [],
    inputs: [{ since: "0x0", previous_output: { tx_hash: `0x${"11".repeat(32)}`, index: "0x0" } }],
    outputs: [
      {
        capacity: `0x${((codeBytes + 200) * 100_000_000).toString(16)}`,
        lock: { code_hash: `0x${"9b".repeat(32)}`, hash_type: "type", args: `0x${"c8".repeat(20)}` },
        type: null,
      },
    ],
    outputs_data: [`0x${"7f".repeat(codeBytes)}`],
    witnesses: [`0x${"55".repeat(85)}`],
  };
  return rpcBody("send_transaction", [tx, "passthrough"], 42);
}

describe("a CKB script deployed through the gateway", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ send_transaction: TX_HASH }));
    gw = await startGateway({ upstreams: { ckb: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("a script of 200 KB reaches the node, and its transaction hash the caller", async () => {
    const from = node.requests.length;
    const answer = await gw.call("ckb", `/${KEYS.all}/`, { body: deployBody(200_000) });
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    expect(answer.json).toEqual({ jsonrpc: "2.0", id: 42, result: TX_HASH });
    expect(node.requests.length).toBe(from + 1);
  });

  it("a transaction as large as the node's tx-pool takes (512,000 bytes) reaches the node", async () => {
    const from = node.requests.length;
    const answer = await gw.call("ckb", `/${KEYS.all}/`, { body: deployBody(511_000) });
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    expect(node.requests.length).toBe(from + 1);
  });

  it("a body past what such a transaction needs in hex is still refused, and reaches no node", async () => {
    const from = node.requests.length;
    const maxBytes = 512_000 * 2 + 64 * 1024;
    const answer = await gw.call("ckb", `/${KEYS.all}/`, { body: deployBody(maxBytes / 2) });
    expect(answer.status).toBe(413);
    expect(answer.json).toMatchObject({ error: { data: { code: "BODY_TOO_LARGE", maxBytes } } });
    expect(node.requests.length).toBe(from);
  });
});
