import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// The answer cache on java-tron's HTTP API (docs/cache.md, "REST interfaces"), whose routes name their block
// in a JSON body (`{"num": 5}`, `{"value": "<block id>"}`) or a GET's query (`?num=5`): a solidified block
// (19 deep) is read once; a newer one while the head stays; a block or id the node does not have ({}) and
// an error java-tron answers with a 200 ({"Error": …}) never.

const HEIGHT = 5_000;
const KNOWN = "ab".repeat(32);
const BROKEN = "ee".repeat(32);
const UNKNOWN = "cd".repeat(32);
/** How far below the head java-tron's solidified block is (two thirds of its 27 witnesses, plus one). */
const SOLIDIFIED = 19;

/** A block as java-tron's JSON-RPC writes it (BlockResult): its id begins with its number. */
function jsonRpcBlock(number: number) {
  const id = (n: number) => `0x${n.toString(16).padStart(16, "0")}${"7e".repeat(24)}`;
  return {
    number: `0x${number.toString(16)}`,
    hash: id(number),
    parentHash: id(Math.max(0, number - 1)),
    timestamp: `0x${(1_700_000_000 + number * 3).toString(16)}`,
    transactions: [],
    uncles: [],
  };
}

describe("the answer cache on TRON's HTTP API (a loopback java-tron)", () => {
  const endpoint = endpointsByLabel.get("trx");
  if (endpoint === undefined) throw new Error("no trx label");
  const state = nodeState(endpoint, HEIGHT);
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(endpoint, () => state, [""], {
        answers: {
          "POST /wallet/getblockbyid": {
            result: (_state, body) => {
              const value = (body as { value?: string } | undefined)?.value;
              if (value === BROKEN)
                return { Error: "class java.lang.IllegalArgumentException : the block id is not valid" };
              return value === KNOWN ? { blockID: KNOWN, block_header: { raw_data: { number: 42 } } } : {};
            },
          },
          // java-tron's /jsonrpc (TronJsonRpcImpl.ethGetBlockByNumber, getByJsonBlockId): `finalized` is the
          // latest solidified block (4.8), a number above the head answers null
          eth_getBlockByNumber: {
            result: ({ height }, params) => {
              const [tag] = params as [string, boolean];
              const tags: Record<string, number> = {
                latest: height,
                finalized: height - SOLIDIFIED,
                earliest: 0,
              };
              const number = tags[tag] ?? Number(BigInt(tag));
              return number > height ? null : jsonRpcBlock(number);
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

  const post = async (route: string, body: unknown) => {
    const answer = await gw.call("trx", `/${KEYS.all}${route}`, { body: JSON.stringify(body) });
    return { status: answer.status, json: answer.json, cache: answer.headers["x-cache"] };
  };
  const reached = (route: string, body: string) =>
    node.requests.filter((r) => r.url.startsWith(route) && r.body.includes(body)).length;

  it("a solidified block is read from the node once, by POST and by GET", async () => {
    const first = await post("/wallet/getblockbynum", { num: 5 });
    expect(first).toMatchObject({
      status: 200,
      cache: "miss",
      json: { block_header: { raw_data: { number: 5 } } },
    });
    expect((await post("/wallet/getblockbynum", { num: 5 })).cache).toBe("hit");
    // the same body with its members spaced or ordered otherwise is the same call
    const spaced = await gw.call("trx", `/${KEYS.all}/wallet/getblockbynum`, { body: '{ "num" : 5 }' });
    expect(spaced.headers["x-cache"]).toBe("hit");
    expect(reached("/wallet/getblockbynum", '"num":5')).toBe(1);
    const get = () => gw.call("trx", `/${KEYS.all}/wallet/getblockbynum?num=6`);
    const byGet = await get();
    expect(byGet.headers["x-cache"]).toBe("miss");
    expect(byGet.json).toMatchObject({ block_header: { raw_data: { number: 6 } } });
    expect((await get()).headers["x-cache"]).toBe("hit");
  });

  it("a block newer than the solidified one is kept only while the head stays", async () => {
    const recent = { num: HEIGHT - 5 };
    expect((await post("/wallet/getblockbynum", recent)).cache).toBe("miss");
    expect((await post("/wallet/getblockbynum", recent)).cache).toBe("hit");
    state.height += 1;
    const served = () => gw.gateway.upstreams.group("trx", "/")?.served.height ?? 0;
    await eventually(() => served() === HEIGHT + 1, 3_000, "the served head moved on");
    expect((await post("/wallet/getblockbynum", recent)).cache).toBe("miss");
  });

  it("a block id the node does not know ({}) and java-tron's 200 Error are never kept; a known id is", async () => {
    for (const value of [UNKNOWN, BROKEN, KNOWN]) {
      await post("/wallet/getblockbyid", { value });
      await post("/wallet/getblockbyid", { value });
    }
    expect(reached("/wallet/getblockbyid", UNKNOWN)).toBe(2);
    expect(reached("/wallet/getblockbyid", BROKEN)).toBe(2);
    expect(reached("/wallet/getblockbyid", KNOWN)).toBe(1);
  });

  // java-tron reads a POST's body with fastjson and protobuf's JsonFormat, both lenient (`{num: 7}`, an
  // unquoted member, is a call): a body JSON.parse refuses says nothing the gateway can key by, and two
  // such bodies behind one query are two calls, never one's answer for the other
  it("a body JSON.parse cannot read is never answered from the cache, whatever its query", async () => {
    const lenient = async (body: string) => {
      const answer = await gw.call("trx", `/${KEYS.all}/wallet/getblockbynum?num=7`, { body });
      return answer.headers["x-cache"];
    };
    await lenient("{num: 7}");
    expect(await lenient("{num: 7}")).not.toBe("hit");
    expect(await lenient("{num: 8}")).not.toBe("hit");
    expect(node.requests.filter((r) => r.body.startsWith("{num: ")).length).toBe(3);
  });

  it("on /jsonrpc: the chain id and a solidified block are read once, a newer block while the head stays", async () => {
    const rpc = async (method: string, params: unknown[]) => {
      const answer = await gw.call("trx", `/${KEYS.all}/jsonrpc`, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
      });
      return { json: answer.json as { id: number; result: unknown }, cache: answer.headers["x-cache"] };
    };
    const asked = (method: string, params: string) =>
      node.requests.filter(
        (r) => r.url.startsWith("/jsonrpc") && r.body.includes(method) && r.body.includes(params),
      ).length;
    expect((await rpc("eth_chainId", [])).cache).toBe("miss");
    expect(await rpc("eth_chainId", [])).toMatchObject({
      cache: "hit",
      json: { id: 7, result: "0x2b6653dc" },
    });
    const height = state.height;
    const old = `0x${(height - 100).toString(16)}`;
    // once the gateway has read the node's solidified block (its prober asks for `finalized`)
    await eventually(
      async () => (await rpc("eth_getBlockByNumber", [old, false])).cache === "hit",
      3_000,
      "a solidified block kept",
    );
    const recent = `0x${(height - 2).toString(16)}`;
    expect((await rpc("eth_getBlockByNumber", [recent, false])).cache).toBe("miss");
    expect((await rpc("eth_getBlockByNumber", [recent, false])).cache).toBe("hit");
    state.height += 1;
    await eventually(
      async () => (await rpc("eth_getBlockByNumber", [recent, false])).cache === "miss",
      3_000,
      "the newer block read again once the head moved",
    );
    expect((await rpc("eth_getBlockByNumber", [old, false])).cache).toBe("hit");
    expect(asked("eth_getBlockByNumber", `"${old}"`)).toBeLessThanOrEqual(2);
  });
});
