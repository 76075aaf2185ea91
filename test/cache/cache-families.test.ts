import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import type { Endpoint, Mount } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { HEIGHT, type NodeForMount, startNodeFor } from "../support/sdk-nodes.js";
import { nodeState } from "../support/software-node.js";
import { readHeight, type TypicalAnswer, typicalCalls } from "../support/typical-calls.js";

// The answer cache on every interface whose registry entry declares cache rules (docs/cache.md), one label
// each, JSON-RPC and REST, behind a loopback node that answers as its node software does (support/node-software.ts): a final
// call reaches the node once and is answered from the cache after, with each caller's id and in the
// caller's envelope; the head call is kept while the head stays, and changes once the node moves on.

const PROBE_MS = 100;

/** The masterchain's one shard, and the basechain's first before it split. */
const MASTER_SHARD = "-9223372036854775808";

/**
 * A call of each interface whose answer can no longer change: by its registry rules (an `always` method,
 * the genesis block, a block at or below the finalized height), and one its node software answers; null for
 * an interface none of whose answers is final.
 */
const FINAL_CALLS: Readonly<
  Record<string, { readonly method: string; readonly params?: unknown; readonly body?: unknown } | null>
> = {
  // REST: the route, which the node answers (MORE_ANSWERS)
  tezos: { method: "GET /chains/main/chain_id" },
  algod: { method: "GET /v2/blocks/1000" },
  "vechain-thor": { method: "GET /blocks/0" },
  // a REST route that names its block in its body (reads.bodies)
  "nem-nis1": { method: "POST /block/at/public", body: { height: 2 } },
  ethereum: { method: "eth_chainId", params: [] },
  // a block at or below GRANDPA's finalized head, whose height the prober reads from its header
  substrate: { method: "chain_getBlockHash", params: [HEIGHT - 10] },
  near: { method: "block", params: { block_id: HEIGHT - 10 } },
  // none: every answer names the node's newest ledger, which moves with each (the registry's `changing`
  // members), and getNetwork's names the protocol version, which an upgrade moves
  "stellar-rpc": null,
  "bitcoin-core": { method: "getblockhash", params: [0] },
  "dogecoin-core": { method: "getblockhash", params: [0] },
  starknet: { method: "starknet_chainId", params: [] },
  ckb: { method: "get_block_hash", params: ["0x0"] },
  ogmios: { method: "queryNetwork/genesisConfiguration", params: { era: "shelley" } },
  // a masterchain block (workchain -1) below the head
  toncenter: { method: "getBlockHeader", params: { workchain: -1, shard: MASTER_SHARD, seqno: HEIGHT - 10 } },
};

/** Calls that look like a final one, and are not: each reaches the node every time. */
const NEVER_KEPT: Readonly<Record<string, { readonly method: string; readonly params?: unknown }>> = {
  // a shard block's seqno counts the shard's blocks, not the masterchain's the head is
  toncenter: { method: "getBlockHeader", params: { workchain: 0, shard: MASTER_SHARD, seqno: 5 } },
};

/**
 * A call of each interface that names no block and reads the node's state at its head (`cache.atHead`): kept
 * while the head stays, and read again once it moved.
 */
const HEAD_READS: Readonly<Record<string, { readonly method: string; readonly params?: unknown }>> = {
  ogmios: { method: "queryNetwork/tip" },
};

/** What the REST nodes answer beyond their head and chain calls: the final routes above. */
const MORE_ANSWERS: Readonly<Record<string, Record<string, TypicalAnswer>>> = {
  tezos: { "GET /chains/main/chain_id": { result: ({ chain }) => chain } },
  algod: { "GET /v2/blocks/1000": { result: () => ({ block: { rnd: 1000, gen: "mainnet-v1.0" } }) } },
  // NIS1 BlockController.blockAt: the block at a height, as its JSON serializer writes it
  "nem-nis1": {
    "POST /block/at/public": {
      result: (_state, body) => ({
        timeStamp: 9_232_000 + Number((body as { height?: number }).height),
        signature: "ab".repeat(64),
        prevBlockHash: { data: "cd".repeat(32) },
        type: 1,
        transactions: [],
        version: 1744830465,
        signer: "ef".repeat(32),
        height: (body as { height?: number }).height,
      }),
    },
  },
  // ton-http-api's getBlockHeader: tonlib's blocks.header of the block named, tagged with the request's @extra
  toncenter: {
    getBlockHeader: {
      result: (_state, params) => {
        const { workchain, shard, seqno } = params as { workchain: number; shard: string; seqno: number };
        return {
          "@type": "blocks.header",
          id: {
            "@type": "ton.blockIdExt",
            workchain,
            shard,
            seqno,
            root_hash: "cm9vdA==",
            file_hash: "ZmlsZQ==",
          },
          global_id: -239,
          version: 0,
          after_merge: false,
          after_split: false,
          before_split: false,
          is_key_block: false,
          gen_utime: 1_700_000_000 + seqno * 5,
          start_lt: String(seqno * 1_000_000),
          end_lt: String(seqno * 1_000_000 + 4),
          "@extra": `${Date.now() / 1000}:0:0.${seqno}`,
        };
      },
    },
  },
  // Ogmios' tip: the slot and the hash of the node's newest block (Data/Json/Query.hs encodePoint)
  ogmios: {
    "queryNetwork/tip": {
      result: ({ height }) => ({
        slot: 140_000_000 + height * 20,
        id: height.toString(16).padStart(64, "0"),
      }),
    },
  },
  // CKB: the block hash at a height, null above its tip (rpc/README.md get_block_hash); block 0 is mainnet's genesis
  ckb: {
    get_block_hash: {
      result: ({ height }, params) => {
        const number = Number(BigInt(String((params as unknown[])[0])));
        if (number > height) return null;
        return number === 0
          ? "0x92b197aa1fba0f63633922c61c92375c9c074a93e85963554f5499fe1450d0e5"
          : `0x${(number + 0xc4b0000).toString(16).padStart(64, "0")}`;
      },
    },
  },
};

interface Case {
  readonly endpoint: Endpoint;
  readonly mount: Mount;
  readonly id: string;
  readonly state: NodeState;
  node?: NodeForMount;
}

/** The first label of each interface with cache rules, on a single-mount endpoint. */
function cases(): Case[] {
  const seen = new Set<string>();
  const found: Case[] = [];
  for (const endpoint of endpointsByLabel.values()) {
    const mount = endpoint.mounts[0];
    const id = mount?.policy.id.split("+")[0];
    if (mount === undefined || id === undefined || endpoint.mounts.length !== 1 || seen.has(id)) continue;
    if ((mount.policy.jsonrpc?.reads ?? mount.policy.restReads)?.cache === undefined) continue;
    seen.add(id);
    found.push({ endpoint, mount, id, state: nodeState(endpoint, HEIGHT) });
  }
  return found;
}

const CASES = cases();

describe("the answer cache on every interface with cache rules (loopback nodes of each software)", () => {
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    for (const c of CASES) {
      c.node = await startNodeFor(c.endpoint, c.mount, c.state, MORE_ANSWERS[c.id]);
      upstreams[c.endpoint.label] = [c.node.upstream];
    }
    gw = await startGateway({
      upstreams,
      health: { ...DEFAULT_HEALTH, probeIntervalMs: PROBE_MS },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(CASES.map((c) => c.node?.node.close()));
  });

  it("covers every interface with cache rules, and each has a final call here", () => {
    expect(CASES.map((c) => c.id).sort()).toEqual(Object.keys(FINAL_CALLS).sort());
  });

  /** A call through the gateway: a JSON-RPC body, or a REST route (`GET /path`). */
  async function send(c: Case, call: Record<string, unknown> | string, restBody?: unknown) {
    const rest = typeof call === "string";
    const [method, path] = rest ? (call.split(" ") as [string, string]) : ["POST", ""];
    const body = rest
      ? restBody === undefined
        ? undefined
        : JSON.stringify(restBody)
      : JSON.stringify(call);
    const answer = await gw.call(c.endpoint.label, `/${KEYS.all}${path}`, {
      method: method as "GET" | "POST",
      ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } }),
    });
    return {
      status: answer.status,
      json: answer.json as Record<string, unknown>,
      cache: answer.headers["x-cache"],
    };
  }

  /** The node's requests for `method` (or a route) with these params, not the prober's calls of it with others. */
  function reached(c: Case, method: string, params: unknown): number {
    const requests = c.node?.node.requests ?? [];
    if (method.includes(" ")) {
      const [verb, path] = method.split(" ") as [string, string];
      return requests.filter((r) => r.method === verb && r.url.endsWith(path)).length;
    }
    const named = params === undefined ? "" : JSON.stringify(params);
    return requests.filter((r) => r.body.includes(`"${method}"`) && r.body.includes(named)).length;
  }

  for (const c of CASES) {
    it.concurrent(`${c.endpoint.label} (${c.id}): a final call is read once, the head call follows the head`, async () => {
      await everyNodeInRotation(gw, c.endpoint.label, 40 * PROBE_MS);
      // a whole probe round (head, and the finalized height where the interface names it) has been answered
      const mark = c.node?.node.requests.length ?? 0;
      await eventually(
        () => (c.node?.node.requests.length ?? 0) >= mark + 4,
        40 * PROBE_MS,
        `${c.endpoint.label}: a probe round`,
      );
      const final = FINAL_CALLS[c.id] ?? null;
      // JSON-RPC 1.0 callers (Bitcoin-style) get a 1.0 envelope from the cache too
      const envelope = c.id.endsWith("-core") ? { jsonrpc: "1.0" } : { jsonrpc: "2.0" };
      const rest = final?.method.includes(" ") === true;
      const call = (id: unknown) =>
        rest
          ? final?.method
          : {
              ...envelope,
              id,
              method: final?.method,
              ...(final?.params === undefined ? {} : { params: final.params }),
            };
      const before = final === null ? 0 : reached(c, final.method, final.params);
      if (final !== null) {
        const first = await send(c, call("first"), final.body);
        const second = await send(c, call(2), final.body);
        expect(first.status, JSON.stringify(first.json)).toBe(200);
        expect(first.json.error ?? null).toBeNull();
        expect([first.cache, second.cache]).toEqual(["miss", "hit"]);
        // ton-http-api answers every id as a string, and so does the cache for it
        const idOf2 = c.mount.policy.jsonrpc?.reads?.cache?.idAsText === true ? "2" : 2;
        expect(second.json).toEqual(rest ? first.json : { ...first.json, id: idOf2 });
        if (!rest) expect(first.json.id).toBe("first");
        // Bitcoin Core 27 answers a 1.0 call with "error": null and no "jsonrpc" member: so does the cache
        if (envelope.jsonrpc === "1.0")
          expect(Object.keys(second.json).sort()).toEqual(["error", "id", "result"]);
        expect(reached(c, final.method, final.params)).toBe(before + 1);
      }
      const never = NEVER_KEPT[c.id];
      if (never !== undefined) {
        const count = reached(c, never.method, never.params);
        for (const id of [4, 5]) {
          const answer = await send(c, { jsonrpc: "2.0", id, method: never.method, params: never.params });
          expect(answer.status, JSON.stringify(answer.json)).toBe(200);
        }
        expect(reached(c, never.method, never.params)).toBe(count + 2);
      }

      const head = typicalCalls(c.endpoint)[0];
      if (head === undefined) throw new Error("no head call");
      const headCall =
        head.head.kind === "rest"
          ? `${head.head.method} ${head.path}`
          : {
              jsonrpc: "2.0",
              id: 1,
              method: head.head.method,
              ...(head.head.params === undefined ? {} : { params: head.head.params }),
            };
      const now = await send(c, headCall);
      const again = await send(c, headCall);
      expect(again.cache).toBe("hit");
      expect(readHeight(again.json, head.head)).toBe(readHeight(now.json, head.head));
      const atHead = HEAD_READS[c.id];
      const stateCall = atHead && { jsonrpc: "2.0", id: 3, method: atHead.method, params: atHead.params };
      const state = stateCall && (await send(c, stateCall));
      if (stateCall !== undefined && state !== undefined) {
        expect(state.status, JSON.stringify(state.json)).toBe(200);
        expect((await send(c, stateCall)).cache).toBe("hit");
      }
      c.state.height += 1;
      await eventually(
        async () => readHeight((await send(c, headCall)).json, head.head) === c.state.height,
        40 * PROBE_MS,
        `${c.endpoint.label}: the new head through the cache`,
      );
      // the node's state at the new head, not the one kept at the old
      if (stateCall !== undefined && state !== undefined) {
        const moved = await send(c, stateCall);
        expect(moved.json.result).not.toEqual(state.json.result);
        expect(moved.cache).toBe("miss");
      }
      // a final answer outlives the head it was read at
      if (final !== null) {
        const later = await send(c, call(6), final.body);
        expect(later.cache, JSON.stringify(later.json)).toBe("hit");
        expect(reached(c, final.method, final.params)).toBe(before + 1);
      }
    });
  }
});
