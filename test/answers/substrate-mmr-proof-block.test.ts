import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { substrateHash, substrateNumber } from "../support/chain-answers.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { NodeRejection } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// mmr_verifyProof and mmr_verifyProofStateless run the MMR runtime API at the block the proof names, its
// `blockHash` member (paritytech/polkadot-sdk substrate/client/merkle-mountain-range/rpc/src/lib.rs:
// verify_proof_with_context(proof.block_hash, …)), and answer a runtime call that failed with 8000
// "Runtime trapped" and the error's Debug text as data: sc-client-db's UnknownBlock, "Header was not
// found in the database" for a block not yet imported, "State already discarded" for one whose state a
// pruned node dropped. mmr_generateProof names that hash (its `at`, the best block when left out). What a
// user saw: a proof made at the head was refused by the node a block behind about half the time, and a
// proof made at an old block by dot-archive was refused by every full node, for an archive key too.

const H = 20_000_000;
const KEPT = 256;
const dot = endpointsByLabel.get("dot") as Endpoint;
const dotArchive = endpointsByLabel.get("dot-archive") as Endpoint;
const hashOf = (n: number) => substrateHash(dot.chain, n);

const proofAt = (n: number) => ({ blockHash: hashOf(n), leaves: "0x041001020304", proof: "0x0401000000" });

const trapped = (what: string) =>
  new NodeRejection(8000, "Runtime trapped", {
    code: 8000,
    message: "Runtime trapped",
    data: `UnknownBlock("${what}")`,
  });

const answers = (keeps: boolean): Record<string, TypicalAnswer> => {
  const verify: TypicalAnswer = {
    result: ({ height }, params) => {
      const list = Array.isArray(params) ? params : [];
      const proof = list.at(-1) as { blockHash?: string } | undefined;
      const at = substrateNumber(dot.chain, proof?.blockHash) ?? -1;
      if (at > height) throw trapped(`Header was not found in the database: ${proof?.blockHash}`);
      if (!keeps && at < height - KEPT) throw trapped(`State already discarded for ${proof?.blockHash}`);
      return true;
    },
  };
  return {
    mmr_generateProof: {
      result: ({ height }, params) => {
        const at = Array.isArray(params) ? params[2] : undefined;
        return proofAt(typeof at === "string" ? (substrateNumber(dot.chain, at) ?? height) : height);
      },
    },
    mmr_verifyProof: verify,
    mmr_verifyProofStateless: verify,
  };
};

describe("Substrate: an MMR proof checked at the block it names", () => {
  let nodes: LoopbackNode[];
  let archive: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all(
      [H + 1, H].map((h) =>
        startLoopbackNode(softwareNode(dot, nodeState(dot, h), [""], { answers: answers(false) })),
      ),
    );
    archive = await startLoopbackNode(
      softwareNode(dotArchive, nodeState(dotArchive, H + 1), [""], { answers: answers(true) }),
    );
    gw = await startGateway({
      upstreams: {
        dot: nodes.map((node, n) => ({ url: node.url, name: n === 0 ? "ahead" : "behind" })),
        "dot-archive": [{ url: archive.url, name: "archive" }],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "dot");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...(nodes ?? []), archive].filter(Boolean).map((node) => node.close()));
  });

  const rpc = async (key: string, method: string, params: unknown, id: number) =>
    gw.call("dot", `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headers: { "content-type": "application/json" },
    });

  for (const method of ["mmr_verifyProof", "mmr_verifyProofStateless"] as const) {
    const params = (proof: unknown) =>
      method === "mmr_verifyProof" ? [proof] : [`0x${"11".repeat(32)}`, proof];

    it(`${method} of a proof made at the head: true, never the node behind's "Header was not found"`, async () => {
      const seen: unknown[] = [];
      for (let i = 0; i < 10; i++) {
        const proof = (await rpc(KEYS.noArchive, "mmr_generateProof", [[H - 10], null], i)).json as {
          result: { blockHash: string };
        };
        expect(proof.result.blockHash).toBe(hashOf(H + 1));
        const got = await rpc(KEYS.noArchive, method, params(proof.result), i);
        seen.push((got.json as { result?: unknown }).result ?? got.text);
      }
      expect(seen).toEqual(seen.map(() => true));
    });

    it(`${method} of a proof at a block whose state a full node dropped: dot-archive's, or ARCHIVE_REQUIRED`, async () => {
      const old = params(proofAt(H - 5 * KEPT));
      const served = await rpc(KEYS.all, method, old, 1);
      expect(served.json).toMatchObject({ result: true });
      expect(served.headers["x-upstream-tier"]).toBe("archive");
      const refused = await rpc(KEYS.noArchive, method, old, 2);
      expect(refused.json).toMatchObject({ error: { code: -32045, data: { archiveLabel: "dot-archive" } } });
      expect(refused.text).not.toContain("State already discarded");
    });
  }
});
