import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// docs/cache.md, "The head, and reorgs": "A write the node refused ... changed nothing, and ends nothing."
// Nodes that refuse a write at a success status (registry `refusedWrite`): java-tron refuses a broadcast
// with HTTP 200 and {"result": false, "code": "SIGERROR", "message": …} (BroadcastServlet; TronWeb's
// sendRawTransaction checks `result`). Such a refused write must not end every caller's answers read at
// the head; one the node took ends them.

const HEIGHT = 5_000;

describe("a write java-tron refused (200, result false) ends nothing", () => {
  const endpoint = endpointsByLabel.get("trx");
  if (endpoint === undefined) throw new Error("no trx label");
  const state = nodeState(endpoint, HEIGHT);
  let node: LoopbackNode;
  let gw: RunningGateway;
  let takes = false;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(endpoint, () => state, [""], {
        answers: {
          "POST /wallet/broadcasttransaction": {
            result: () =>
              takes
                ? { result: true, txid: "77".repeat(32) }
                : {
                    result: false,
                    code: "SIGERROR",
                    txid: "77".repeat(32),
                    message: "76616c6964617465207369676e6174757265206572726f72",
                  },
          },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { trx: Object.fromEntries(endpoint.mounts.map((m) => [m.path, [node.url]])) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "trx", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const post = async (key: string, route: string, body: unknown) => {
    const answer = await gw.call("trx", `/${key}${route}`, { body: JSON.stringify(body) });
    return { status: answer.status, json: answer.json, cache: answer.headers["x-cache"] };
  };

  it("another caller's answer read at the head stays a hit after a refused broadcast", async () => {
    const recent = { num: HEIGHT - 5 }; // above the solidified block: kept while the head stays
    expect((await post(KEYS.all, "/wallet/getblockbynum", recent)).cache).toBe("miss");
    expect((await post(KEYS.all, "/wallet/getblockbynum", recent)).cache).toBe("hit");
    // the prober's rounds alone (the head stays) end nothing
    const seen = node.requests.length;
    await eventually(() => node.requests.length >= seen + 5, 5_000, "some probe rounds");
    expect((await post(KEYS.all, "/wallet/getblockbynum", recent)).cache).toBe("hit");
    const refused = await post(KEYS.dedicated, "/wallet/broadcasttransaction", {
      txID: "77".repeat(32),
      raw_data: {},
      raw_data_hex: "0a02",
      signature: ["00"],
    });
    expect(refused.json).toMatchObject({ result: false, code: "SIGERROR" });
    expect((await post(KEYS.all, "/wallet/getblockbynum", recent)).cache).toBe("hit");
    // one the node took may change what is read at the head
    takes = true;
    const taken = await post(KEYS.dedicated, "/wallet/broadcasttransaction", {
      txID: "78".repeat(32),
      raw_data: {},
      raw_data_hex: "0a02",
      signature: ["00"],
    });
    expect(taken.json).toMatchObject({ result: true });
    expect((await post(KEYS.all, "/wallet/getblockbynum", recent)).cache).toBe("miss");
  });
});

// stellar-rpc refuses a transaction stellar-core rejected with a result, not a JSON-RPC error:
// {"status": "ERROR", "errorResultXdr": …} (cmd/stellar-rpc/internal/methods/send_transaction.go,
// TXStatusError); over HTTP and over a WebSocket (bridged to the node over HTTP) alike.
describe("a sendTransaction stellar-rpc answered status ERROR ends nothing", () => {
  const endpoint = endpointsByLabel.get("xlm");
  if (endpoint === undefined) throw new Error("no xlm label");
  const state = nodeState(endpoint, 50_000);
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(endpoint, () => state, [""], {
        answers: {
          sendTransaction: {
            result: ({ height }) => ({
              status: "ERROR",
              hash: "88".repeat(32),
              latestLedger: height,
              latestLedgerCloseTime: "1700000000",
              errorResultXdr: "AAAAAAAAAGT////7AAAAAA==",
            }),
          },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { xlm: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "xlm", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const rpc = async (key: string, method: string, params?: unknown) => {
    const answer = await gw.call("xlm", `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, ...(params === undefined ? {} : { params }) }),
    });
    return { json: answer.json as { result?: { status?: string } }, cache: answer.headers["x-cache"] };
  };

  it("another caller's head answer stays a hit after a refused sendTransaction", async () => {
    await rpc(KEYS.all, "getLatestLedger");
    expect((await rpc(KEYS.all, "getLatestLedger")).cache).toBe("hit");
    const refused = await rpc(KEYS.dedicated, "sendTransaction", { transaction: "AAAAAgAAAAA=" });
    expect(refused.json.result?.status).toBe("ERROR");
    expect((await rpc(KEYS.all, "getLatestLedger")).cache).toBe("hit");
  });
});

// A NEM wallet's announce that NIS refused (HTTP 200, a NemAnnounceResult with code 5
// FAILURE_INSUFFICIENT_BALANCE) emptied every other caller's cached head answers, as a write it took does:
// NIS answers every announce with 200 (NemProject/nem TransactionController: `new NemAnnounceResult(result,
// …)` whatever the ValidationResult), its message the result's name (nem-sdk and NanoWallet check
// `code === 1`), so the registry's `refusedWrite` reads the message.

const NIS_HEIGHT = 4_000_000;
const NIS_HASH = { data: "c1".repeat(32) };

describe("a transaction NIS1 refused (200, code 5 FAILURE_INSUFFICIENT_BALANCE) ends nothing", () => {
  const endpoint = endpointsByLabel.get("nem");
  if (endpoint === undefined) throw new Error("no nem label");
  const state = nodeState(endpoint, NIS_HEIGHT);
  let node: LoopbackNode;
  let gw: RunningGateway;
  let takes = false;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(endpoint, () => state, [""], {
        answers: {
          "POST /transaction/announce": {
            result: () =>
              takes
                ? {
                    type: 1,
                    code: 1,
                    message: "SUCCESS",
                    transactionHash: NIS_HASH,
                    innerTransactionHash: {},
                  }
                : {
                    type: 1,
                    code: 5,
                    message: "FAILURE_INSUFFICIENT_BALANCE",
                    transactionHash: NIS_HASH,
                    innerTransactionHash: {},
                  },
          },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { nem: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "nem", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const height = async () => {
    const answer = await gw.call("nem", `/${KEYS.all}/chain/height`);
    return answer.headers["x-cache"];
  };
  const announce = async () =>
    (
      await gw.call("nem", `/${KEYS.dedicated}/transaction/announce`, {
        body: JSON.stringify({ data: "0101000001000098", signature: "ab".repeat(64) }),
      })
    ).json;

  it("another caller's /chain/height stays a hit after a refused announce; a taken one ends it", async () => {
    await height();
    expect(await height()).toBe("hit");
    const seen = node.requests.length;
    await eventually(() => node.requests.length >= seen + 5, 5_000, "some probe rounds");
    expect(await height()).toBe("hit");
    expect(await announce()).toMatchObject({ code: 5, message: "FAILURE_INSUFFICIENT_BALANCE" });
    expect(await height()).toBe("hit");
    takes = true;
    expect(await announce()).toMatchObject({ code: 1, message: "SUCCESS" });
    expect(await height()).toBe("miss");
  });
});
