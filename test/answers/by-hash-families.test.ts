import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A read naming a block by hash that one node has not seen yet is asked of the other node, for JSON-RPC
// families beyond bitcoind and nearcore (by-hash-unknown.test.ts): Starknet's "Block not found" (code 24),
// for a block read and for an event query bounded by block hashes, Substrate's null and UnknownBlock, CKB's
// null.

const HASH = `0x${"00".repeat(4)}${"ab".repeat(28)}`;
const H = 7_000_000;
const idOf = (body: string) => /"id":\s*("[^"]*"|\d+)/.exec(body)?.[1] ?? "null";
const reply = (body: string, result: unknown) => ({
  body: `{"jsonrpc":"2.0","id":${idOf(body)},"result":${JSON.stringify(result)}}`,
});
const fail = (body: string, code: number, message: string) => ({
  body: `{"jsonrpc":"2.0","id":${idOf(body)},"error":{"code":${code},"message":${JSON.stringify(message)}}}`,
});

interface Case {
  name: string;
  label: string;
  method: string;
  params: unknown;
  known: (body: string) => { body: string };
  unknown: (body: string) => { body: string };
}

const cases: Case[] = [
  {
    name: "Starknet getBlockWithTxHashes by block_hash",
    label: "starknet",
    method: "starknet_getBlockWithTxHashes",
    params: [{ block_hash: HASH }],
    known: (b) => reply(b, { block_hash: HASH, block_number: H + 1, transactions: [] }),
    unknown: (b) => fail(b, 24, "Block not found"),
  },
  {
    name: "Starknet getEvents over one block by hash",
    label: "starknet-testnet",
    method: "starknet_getEvents",
    params: [{ from_block: { block_hash: HASH }, to_block: { block_hash: HASH }, chunk_size: 10 }],
    known: (b) => reply(b, { events: [{ block_hash: HASH, block_number: H + 1, data: [], keys: [] }] }),
    unknown: (b) => fail(b, 24, "Block not found"),
  },
  {
    name: "Substrate chain_getBlock by hash",
    label: "dot",
    method: "chain_getBlock",
    params: [HASH],
    known: (b) =>
      reply(b, {
        block: { header: { number: `0x${(H + 1).toString(16)}` }, extrinsics: [] },
        justifications: null,
      }),
    unknown: (b) => reply(b, null),
  },
  {
    name: "Substrate state_getStorage at a hash",
    label: "ksm",
    method: "state_getStorage",
    params: ["0x26aa394eea5630e07c48ae0c9558cef7", HASH],
    known: (b) => reply(b, "0x01"),
    unknown: (b) =>
      fail(b, 4003, `Client error: UnknownBlock: Header was not found in the database: ${HASH}`),
  },
  {
    name: "CKB get_block by hash",
    label: "ckb",
    method: "get_block",
    params: [HASH],
    known: (b) => reply(b, { header: { number: `0x${(H + 1).toString(16)}`, hash: HASH }, transactions: [] }),
    unknown: (b) => reply(b, null),
  },
];

describe("a block by hash one node has not seen yet, more JSON-RPC families", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    for (const c of cases) {
      const endpoint = endpointsByLabel.get(c.label) as Endpoint;
      const make = (height: number, answer: (body: string) => { body: string }) => {
        const byHash: Responder = (request) =>
          request.body.includes(HASH) ? answer(request.body) : undefined;
        return startLoopbackNode(firstOf(byHash, softwareNode(endpoint, nodeState(endpoint, height))));
      };
      const pair = await Promise.all([make(H + 1, c.known), make(H, c.unknown)]);
      nodes.push(...pair);
      upstreams[c.label] = pair.map((node, i) => ({
        url: node.url,
        name: `n${i}`,
        weight: i === 0 ? 1 : 50,
      }));
    }
    gw = await startGateway({ upstreams, health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 } });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  for (const c of cases)
    it(c.name, async () => {
      const answers: unknown[] = [];
      for (let i = 0; i < 6; i++) {
        const got = await gw.call(c.label, `/${KEYS.all}/`, {
          body: JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: c.method, params: c.params }),
          headers: { "content-type": "application/json" },
        });
        const json = got.json as { result?: unknown; error?: unknown };
        answers.push(json.error ?? (json.result === null ? null : "ok"));
      }
      expect(answers).toEqual(answers.map(() => "ok"));
    });
});
