import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type LoopbackNode, type SeenRequest, startLoopbackNode } from "../support/loopback-node.js";
import { type NodeState, nearBlockHash } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { HEAD_ANSWERS, type TypicalAnswer } from "../support/typical-calls.js";

// A caller polling a network's final block (NEAR's `block {"finality": "final"}`, Starknet's
// `l1_accepted`, TRON's `/walletsolidity/getnowblock`) across two nodes that overtake each other a block
// at a time, faster than the prober reads them (docs/upstreams.md, "Answers across nodes"): each node
// answers its own final block, a fixed depth below its own head. The final block the caller sees never
// goes back: each answer tells the label which node holds what final, and the next such read goes first
// to the node that answered the highest, whatever its last probe said. Before, the read went to any node
// at the served head, and the one whose final block was a block lower answered it.

const HEIGHT = 100_000;
const STEPS = 8;
const READS_PER_STEP = 4;
const JAVA_TRON_NOW_BLOCK = HEAD_ANSWERS["POST /wallet/getnowblock"] as TypicalAnswer;
const idOf = (r: SeenRequest) => (JSON.parse(r.body) as { id?: unknown }).id;

interface Case {
  readonly label: string;
  /** How far below its head a node's final block is. */
  readonly depth: number;
  readonly isCall: (r: SeenRequest) => boolean;
  readonly answer: (r: SeenRequest, state: NodeState) => unknown;
  /** One read of the final block, through the gateway: its height. */
  readonly read: (gw: RunningGateway) => Promise<number>;
}

const CASES: readonly Case[] = [
  {
    label: "near",
    depth: 2,
    isCall: (r) => r.body.includes('"block"'),
    answer: (r, s) => {
      const { finality, block_id } = (
        JSON.parse(r.body) as { params: { finality?: string; block_id?: number } }
      ).params;
      const h = finality === "final" ? s.height - 2 : finality !== undefined ? s.height : Number(block_id);
      return {
        jsonrpc: "2.0",
        id: idOf(r),
        result: {
          author: "a.near",
          header: { height: h, hash: nearBlockHash(h), prev_hash: nearBlockHash(h - 1) },
          chunks: [],
        },
      };
    },
    read: async (gw) => {
      const a = await gw.call("near", `/${KEYS.all}`, { body: rpcBody("block", { finality: "final" }, 1) });
      return (a.json as { result: { header: { height: number } } }).result.header.height;
    },
  },
  {
    label: "starknet",
    depth: 2,
    isCall: (r) => r.body.includes('"starknet_getBlockWithTxHashes"'),
    answer: (r, s) => {
      const h = r.body.includes("l1_accepted") ? s.height - 2 : s.height;
      return {
        jsonrpc: "2.0",
        id: idOf(r),
        result: {
          block_number: h,
          block_hash: `0x${h.toString(16)}`,
          parent_hash: `0x${(h - 1).toString(16)}`,
          status: "ACCEPTED_ON_L1",
          transactions: [],
        },
      };
    },
    read: async (gw) => {
      const a = await gw.call("starknet", `/${KEYS.all}`, {
        body: rpcBody("starknet_getBlockWithTxHashes", ["l1_accepted"], 1),
      });
      return (a.json as { result: { block_number: number } }).result.block_number;
    },
  },
  {
    label: "trx",
    depth: 19,
    isCall: (r) => r.url.startsWith("/walletsolidity/getnowblock"),
    // a solidity node answers getnowblock as a full node does, with its solidified block
    answer: (_r, s) => JAVA_TRON_NOW_BLOCK.result({ ...s, height: s.height - 19 }),
    read: async (gw) => {
      const a = await gw.call("trx", `/${KEYS.all}/walletsolidity/getnowblock`, { body: "{}" });
      return (a.json as { block_header: { raw_data: { number: number } } }).block_header.raw_data.number;
    },
  },
];

for (const cache of [false, true])
  for (const c of CASES)
    describe(`${c.label}: the final block a caller polls never goes back (cache ${cache ? "on" : "off"})`, () => {
      const endpoint = endpointsByLabel.get(c.label) as Endpoint;
      // both at one height as the prober first reads them
      const states = [nodeState(endpoint, HEIGHT), nodeState(endpoint, HEIGHT)];
      let nodes: LoopbackNode[];
      let gw: RunningGateway;

      beforeAll(async () => {
        nodes = await Promise.all(
          states.map((_, i) => {
            const software = softwareNode(endpoint, () => states[i] as NodeState);
            return startLoopbackNode((r) =>
              c.isCall(r) ? { status: 200, body: c.answer(r, states[i] as NodeState) } : software(r),
            );
          }),
        );
        const list = nodes.map((n, i) => ({ url: n.url, name: `n${i}` }));
        gw = await startGateway({
          upstreams: {
            [c.label]:
              c.label === "trx" ? Object.fromEntries(endpoint.mounts.map((m) => [m.path, list])) : list,
          } as never,
          // the default interval: the nodes overtake each other many times between two probes
          health: { ...DEFAULT_HEALTH },
          ...(cache ? { cache: { ...DEFAULT_CACHE } } : {}),
        });
        await everyNodeInRotation(gw, c.label);
      });
      afterAll(async () => {
        await gw?.close();
        await Promise.all((nodes ?? []).map((n) => n.close()));
      });

      it("while the two nodes overtake each other a block at a time", async () => {
        const seen: number[] = [];
        for (let step = 1; step <= STEPS; step++) {
          // both move on past what the prober last read, a block apart, and the other one leads each step
          const leader = step % 2;
          states[leader] = { ...(states[leader] as NodeState), height: HEIGHT + 2 * step };
          states[1 - leader] = { ...(states[1 - leader] as NodeState), height: HEIGHT + 2 * step - 1 };
          for (let i = 0; i < READS_PER_STEP; i++) seen.push(await c.read(gw));
        }
        const back = seen.findIndex((h, i) => i > 0 && h < (seen[i - 1] as number));
        expect(back, `went back at ${back}: ${seen.slice(Math.max(0, back - 3), back + 2)}`).toBe(-1);
        // and, read from the nodes each time, it moved with them; with the cache on, an answer read at the
        // head is kept while the label's head stays, up to half a block (docs/cache.md)
        if (!cache) expect(Math.max(...seen)).toBeGreaterThanOrEqual(HEIGHT + 2 * STEPS - 1 - c.depth);
      });
    });
