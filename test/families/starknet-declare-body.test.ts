import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// A Starknet contract is declared with starknet_addDeclareTransaction, whose params carry the whole contract
// class: its Sierra program as a list of felts in hex, its entry points and its ABI. The sequencer takes a
// class of up to 81,920 felts and 4,089,446 bytes of JSON (apollo_gateway's stateless transaction validator:
// max_contract_bytecode_size, max_contract_class_object_size, serde_json::to_string(&contract_class).len()).
// OpenZeppelin's ERC-20 (starknet.js __mocks__/cairo/cairo294/erc20_oz100.sierra.json, 328,036 bytes as
// written) makes a body of some 300 KB: refused BODY_TOO_LARGE by the 256 KiB body limit, so the most common
// contract there is could not be declared through the gateway.

const TX_HASH = `0x${"5a".repeat(31)}`;
const CLASS_HASH = `0x${"3c".repeat(31)}`;
/** A felt as a Sierra program holds most of them: 252 bits in hex. */
const FELT = `0x${"7d4d99e9ed8d285b5c61b493cedb63976bc3d9da867933d829f49ce838b5e7"}`;

/** A v3 declare of a class whose program is `felts` felts, as starknet.js's Account.declare sends it. */
function declareBody(felts: number): string {
  const declare = {
    type: "DECLARE",
    sender_address: `0x${"01".repeat(31)}`,
    compiled_class_hash: `0x${"02".repeat(31)}`,
    version: "0x3",
    signature: [`0x${"03".repeat(31)}`, `0x${"04".repeat(31)}`],
    nonce: "0x7",
    contract_class: {
      sierra_program: Array.from({ length: felts }, () => FELT),
      contract_class_version: "0.1.0",
      entry_points_by_type: {
        CONSTRUCTOR: [{ selector: `0x${"05".repeat(31)}`, function_idx: 0 }],
        EXTERNAL: [{ selector: `0x${"06".repeat(31)}`, function_idx: 1 }],
        L1_HANDLER: [],
      },
      abi: JSON.stringify([
        { type: "function", name: "transfer", inputs: [], outputs: [], state_mutability: "external" },
      ]),
    },
    resource_bounds: {
      l1_gas: { max_amount: "0x0", max_price_per_unit: "0x0" },
      l2_gas: { max_amount: "0x5f5e100", max_price_per_unit: "0x1" },
      l1_data_gas: { max_amount: "0x186a0", max_price_per_unit: "0x1" },
    },
    tip: "0x0",
    paymaster_data: [],
    account_deployment_data: [],
    nonce_data_availability_mode: "L1",
    fee_data_availability_mode: "L1",
  };
  return rpcBody("starknet_addDeclareTransaction", { declare_transaction: declare }, 0);
}

describe("a Starknet contract declared through the gateway", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      jsonRpcResponder({
        starknet_addDeclareTransaction: { transaction_hash: TX_HASH, class_hash: CLASS_HASH },
      }),
    );
    gw = await startGateway({ upstreams: { starknet: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("a class the size of OpenZeppelin's ERC-20 (some 300 KB) reaches the node, and its hashes the caller", async () => {
    const from = node.requests.length;
    const body = declareBody(4_700);
    expect(body.length).toBeGreaterThan(300_000);
    const answer = await gw.call("starknet", `/${KEYS.all}/`, { body });
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    expect(answer.json).toEqual({
      jsonrpc: "2.0",
      id: 0,
      result: { transaction_hash: TX_HASH, class_hash: CLASS_HASH },
    });
    expect(node.requests.length).toBe(from + 1);
  });

  it("a class as large as the sequencer takes (4,089,446 bytes of JSON) reaches the node", async () => {
    const from = node.requests.length;
    // 61,000 felts of 64 characters, each quoted and with its comma: just under the class limit
    const body = declareBody(61_000);
    expect(body.length).toBeGreaterThan(4_000_000);
    const answer = await gw.call("starknet", `/${KEYS.all}/`, { body });
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    expect(node.requests.length).toBe(from + 1);
  });

  it("a body past the largest class and 64 KiB for the rest of the call is still refused, and reaches no node", async () => {
    const from = node.requests.length;
    const maxBytes = 4_089_446 + 64 * 1024;
    const answer = await gw.call("starknet", `/${KEYS.all}/`, { body: declareBody(64_000) });
    expect(answer.status).toBe(413);
    expect(answer.json).toMatchObject({ error: { data: { code: "BODY_TOO_LARGE", maxBytes } } });
    expect(node.requests.length).toBe(from);
  });
});
