import { actions, createTransaction, JsonRpcProvider, KeyPair, KeyPairSigner } from "near-api-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { sdkUrl, useTestHostsForGlobalFetch } from "./resolve.js";

// A NEAR contract is deployed in one transaction whose DeployContract action carries the whole Wasm, and
// near-api-js sends it base64 in one send_tx body. nearcore takes a transaction of up to
// max_transaction_size, 1,572,864 bytes (core/parameters/res/runtime_configs/parameters.snap), in a body of
// up to 10 MiB (chain/jsonrpc RpcLimitsConfig json_payload_max_size). A contract of a few hundred KiB, as
// most are, was refused BODY_TOO_LARGE by the gateway's 256 KiB body limit: the SDK could not deploy it.

const SIGNER_ID = "deployer.near";
/** nearcore's answer to send_tx with wait_until NONE (RpcTransactionResponse: no outcome yet). */
const SENT = { final_execution_status: "NONE" };

describe("near-api-js deploys a contract through the gateway", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restoreFetch: () => Promise<void>;
  let provider: JsonRpcProvider;
  const key = KeyPair.fromRandom("ed25519");
  const signer = new KeyPairSigner(key);

  beforeAll(async () => {
    restoreFetch = useTestHostsForGlobalFetch();
    node = await startLoopbackNode(jsonRpcResponder({ send_tx: SENT }));
    gw = await startGateway({ upstreams: { near: [node.url] } });
    provider = new JsonRpcProvider({ url: sdkUrl(gw, "near") }, { retries: 1 });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await restoreFetch?.();
  });

  /** A signed deploy of `codeBytes` bytes of Wasm, as near-api-js's Account.deployContract makes it. */
  async function deploy(codeBytes: number) {
    const code = new Uint8Array(codeBytes).fill(0x61);
    const blockHash = new Uint8Array(32).fill(7);
    const tx = createTransaction(
      SIGNER_ID,
      key.getPublicKey(),
      SIGNER_ID,
      1n,
      [actions.deployContract(code)],
      blockHash,
    );
    const { signedTransaction } = await signer.signTransaction(tx);
    return signedTransaction;
  }

  it("a contract of 600 KiB reaches the node, and its answer the SDK", async () => {
    const from = node.requests.length;
    const answer = await provider.sendTransactionAsync(await deploy(600 * 1024));
    expect(answer).toMatchObject(SENT);
    const sent = node.requests.slice(from);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.body.length).toBeGreaterThan(800 * 1024);
  });

  it("a transaction as large as nearcore takes (1,572,864 bytes) reaches the node", async () => {
    const from = node.requests.length;
    // the transaction around the code: signer, receiver, key, nonce, block hash, action tag, signature
    const answer = await provider.sendTransactionAsync(await deploy(1_572_864 - 400));
    expect(answer).toMatchObject(SENT);
    expect(node.requests.length).toBe(from + 1);
  });

  it("a body past what such a transaction needs in hex is still refused, and reaches no node", async () => {
    const from = node.requests.length;
    // the limit: the largest transaction twice over (hex; base64 is shorter) and 64 KiB for the envelope
    const maxBytes = 1_572_864 * 2 + 64 * 1024;
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "send_tx",
      params: { signed_tx_base64: "A".repeat(maxBytes) },
    });
    const refused = await gw.call("near", `/${KEYS.all}/`, { body });
    expect(refused.status).toBe(413);
    expect(refused.json).toMatchObject({ error: { data: { code: "BODY_TOO_LARGE", maxBytes } } });
    expect(node.requests.length).toBe(from);
  });
});
