import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// More head-relative reads of non-EVM families (registry atHead, atHeadPaths, heightIn, unnamedIsHead),
// behind two loopback nodes of the same software, the one ahead at H + 1 and the one behind at H, both in
// rotation: a Stellar page by cursor, Bitcoin Core's getmininginfo, toncenter's runGetMethodStd, java-tron's
// getblock with and without its block, Thor's log query, NIS1's transaction by hash, Octez's list of heads.
// Each read is sent several times: every answer must be the one ahead's (as head-more-reads.test.ts does).

const PROBE_MS = 100;
const H = 3_000_000;
const TRIES = 8;

const tronBlock = (num: number) => ({
  blockID: `${num.toString(16).padStart(16, "0")}${"9c".repeat(24)}`,
  block_header: { raw_data: { number: num, timestamp: 1_735_689_600_000 } },
});

const EXTRA: Readonly<Record<string, TypicalAnswer>> = {
  // stellar-rpc getTransactions / getLedgers: latestLedger is the node's own; getLedgers' cursor is a ledger
  getTransactions: {
    result: ({ height }) => ({
      transactions: [],
      latestLedger: height,
      latestLedgerCloseTimestamp: 1_735_689_600,
      oldestLedger: height - 100,
      oldestLedgerCloseTimestamp: 1_735_600_000,
      cursor: `${BigInt(height) << 32n}`,
    }),
  },
  getLedgers: {
    result: ({ height }, params) => {
      const cursor = Number((params as { pagination?: { cursor?: string } })?.pagination?.cursor ?? NaN);
      const start = cursor + 1;
      if (start > height)
        throw new NodeRejection(
          -32600,
          `start ledger (${start}) must be between the oldest ledger: ${height - 100} and the latest ledger: ${height} for this rpc instance`,
        );
      return {
        ledgers: [{ hash: "ab".repeat(32), sequence: start, ledgerCloseTime: "1735689600" }],
        latestLedger: height,
        latestLedgerCloseTime: 1_735_689_600,
        oldestLedger: height - 100,
        oldestLedgerCloseTime: 1_735_600_000,
        cursor: String(start),
      };
    },
  },
  // Bitcoin Core getmininginfo: "blocks" is the node's active chain height
  getmininginfo: {
    result: ({ height }) => ({
      blocks: height,
      difficulty: 1,
      networkhashps: 1,
      pooledtx: 0,
      chain: "main",
      warnings: "",
    }),
  },
  // ton-http-api-cpp runGetMethodStd: run at the node's last masterchain block, which it names
  runGetMethodStd: {
    result: ({ height }) => ({
      "@type": "smc.runResult",
      gas_used: 100,
      stack: [],
      exit_code: 0,
      block_id: { "@type": "ton.blockIdExt", workchain: -1, shard: "-9223372036854775808", seqno: height },
    }),
  },
  // java-tron GetBlockServlet (Wallet.getBlock): no id_or_num is the head block; a number past the head {}
  "POST /wallet/getblock": {
    result: ({ height }, body) => {
      const idOrNum = (body as { id_or_num?: string } | undefined)?.id_or_num;
      if (idOrNum === undefined || idOrNum === "") return tronBlock(height);
      const num = Number(idOrNum);
      return num <= height ? tronBlock(num) : {};
    },
  },
  // Thor POST /logs/event: events of the range, up to the node's best block
  "POST /logs/event": {
    result: ({ height }, body) => {
      const range = (body as { range?: { from?: number; to?: number } } | undefined)?.range ?? {};
      const to = Math.min(range.to ?? height, height);
      const out = [];
      for (let n = range.from ?? 0; n <= to; n++)
        out.push({
          address: "0x0000000000000000000000000000456e65726779",
          topics: [],
          data: "0x",
          meta: { blockNumber: n },
        });
      return out;
    },
  },
  // Octez GET /chains/main/blocks: the current head(s)
  "GET /chains/main/blocks": { result: ({ height }) => [[`BLhead${height}`]] },
};

/** NIS1 /transaction/get for a transaction mined at H + 1: a node below it answers its 400. */
function withNemTx(inner: Responder, height: () => number): Responder {
  return (request) => {
    if (request.url.startsWith("/transaction/get")) {
      if (height() < H + 1)
        return {
          status: 400,
          body: '{"timeStamp":0,"error":"Bad Request","message":"Neither transaction nor transaction with hash found","status":400}',
        };
      return {
        status: 200,
        body: JSON.stringify({ meta: { height: H + 1, hash: { data: "ab".repeat(32) } }, transaction: {} }),
      };
    }
    return inner(request);
  };
}

describe("more head-relative reads of non-EVM families (two loopback nodes one block apart)", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    for (const label of ["xlm", "btc", "ton", "trx", "vet", "nem", "xtz"]) {
      const endpoint = endpointsByLabel.get(label) as Endpoint;
      const pair = await Promise.all(
        [H + 1, H].map((h) => {
          const state = nodeState(endpoint, h);
          const inner = softwareNode(endpoint, state, [""], { answers: EXTRA });
          return startLoopbackNode(label === "nem" ? withNemTx(inner, () => state.height) : inner);
        }),
      );
      nodes.push(...pair);
      const list = pair.map((node, n) => ({ url: node.url, name: n === 0 ? "ahead" : "behind" }));
      upstreams[label] =
        endpoint.mounts.length === 1 ? list : Object.fromEntries(endpoint.mounts.map((m) => [m.path, list]));
    }
    gw = await startGateway({ upstreams, health: { ...DEFAULT_HEALTH, probeIntervalMs: PROBE_MS } });
    await everyNodeInRotation(gw, undefined, 40 * PROBE_MS);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  const rpc = async (label: string, path: string, method: string, params: unknown, id: number) => {
    const got = await gw.call(label, `/${KEYS.all}${path}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headers: { "content-type": "application/json" },
    });
    return got.json as { result?: Record<string, unknown>; error?: unknown };
  };

  it("Stellar getTransactions by cursor: latestLedger never below the getLatestLedger just seen", async () => {
    const seen: unknown[] = [];
    for (let i = 0; i < TRIES; i++) {
      const head = (await rpc("xlm", "/", "getLatestLedger", {}, i)).result?.sequence;
      seen.push(head);
      const answer = await rpc("xlm", "/", "getTransactions", { pagination: { cursor: "1", limit: 5 } }, i);
      seen.push(answer.result?.latestLedger);
    }
    expect(seen).toEqual(seen.map(() => H + 1));
  });

  it("Stellar getLedgers by cursor: the ledger after the cursor (H + 1) is never asked of the node at H", async () => {
    const errors: unknown[] = [];
    for (let i = 0; i < TRIES; i++) {
      const answer = await rpc("xlm", "/", "getLedgers", { pagination: { cursor: String(H), limit: 1 } }, i);
      if (answer.error !== undefined) errors.push(answer.error);
    }
    expect(errors).toEqual([]);
  });

  it("Bitcoin Core getmininginfo: blocks is the head just served, never the block before", async () => {
    const blocks: unknown[] = [];
    for (let i = 0; i < TRIES; i++)
      blocks.push((await rpc("btc", "/", "getmininginfo", [], i)).result?.blocks);
    expect(blocks).toEqual(blocks.map(() => H + 1));
  });

  it("toncenter runGetMethodStd: runs at the head just served (its block_id), never the block before", async () => {
    const seqnos: unknown[] = [];
    for (let i = 0; i < TRIES; i++) {
      const answer = await rpc(
        "ton",
        "/jsonRPC",
        "runGetMethodStd",
        { address: "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N", method: "seqno", stack: [] },
        i,
      );
      seqnos.push((answer.result?.block_id as { seqno?: number } | undefined)?.seqno);
    }
    expect(seqnos).toEqual(seqnos.map(() => H + 1));
  });

  const rest = async (label: string, path: string, body?: unknown) => {
    const got = await gw.call(label, `/${KEYS.all}${path}`, {
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headers: { "content-type": "application/json" },
    });
    return got;
  };

  it("TRON /wallet/getblock without id_or_num is the head block, never the one before", async () => {
    const numbers: unknown[] = [];
    for (let i = 0; i < TRIES; i++) {
      const got = await rest("trx", "/wallet/getblock", { detail: false });
      numbers.push((got.json as ReturnType<typeof tronBlock>).block_header?.raw_data.number);
    }
    expect(numbers).toEqual(numbers.map(() => H + 1));
  });

  it("TRON /wallet/getblock by id_or_num H + 1 never goes to the node at H (which answers {})", async () => {
    const numbers: unknown[] = [];
    for (let i = 0; i < TRIES; i++) {
      const got = await rest("trx", "/wallet/getblock", { id_or_num: String(H + 1), detail: false });
      numbers.push((got.json as ReturnType<typeof tronBlock>).block_header?.raw_data.number);
    }
    expect(numbers).toEqual(numbers.map(() => H + 1));
  });

  it("VeChain POST /logs/event up to the best block just seen never silently misses its events", async () => {
    const lasts: unknown[] = [];
    for (let i = 0; i < TRIES; i++) {
      const best = ((await rest("vet", "/blocks/best")).json as { number: number }).number;
      const got = await rest("vet", "/logs/event", {
        range: { unit: "block", from: best - 1, to: best },
        criteriaSet: [],
      });
      const events = got.json as { meta: { blockNumber: number } }[];
      lasts.push(events.at(-1)?.meta.blockNumber);
    }
    expect(lasts).toEqual(lasts.map(() => H + 1));
  });

  it("NEM GET /transaction/get for a transaction in the last block just seen is found every time", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < TRIES; i++) {
      const height = ((await rest("nem", "/chain/height")).json as { height: number }).height;
      expect(height).toBe(H + 1);
      statuses.push((await rest("nem", `/transaction/get?hash=${"ab".repeat(32)}`)).status);
    }
    expect(statuses).toEqual(statuses.map(() => 200));
  });

  it("Tezos GET /chains/main/blocks (the current head) is never the block before", async () => {
    const heads: unknown[] = [];
    for (let i = 0; i < TRIES; i++)
      heads.push(((await rest("xtz", "/chains/main/blocks")).json as string[][])[0]?.[0]);
    expect(heads).toEqual(heads.map(() => `BLhead${H + 1}`));
  });
});
