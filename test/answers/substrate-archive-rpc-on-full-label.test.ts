import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// The new JSON-RPC spec's archive_v1_* calls (a block's body, header, hash by height, a runtime call at a
// block) are served by archive nodes alone: polkadot-sdk's sc-service merges the `archive` RPC class only
// when state and blocks pruning are both in archive mode (builder.rs, "An archive node that can respond to
// the `archive` RPC-v2 queries"); a full node, at its default 256 blocks of state, answers jsonrpsee's
// -32601 "Method not found". `dot` lists them, and sent every one to its full nodes: a caller with archive
// access never reached dot-archive, and one without got "Method not found" for a method the network lists,
// not ARCHIVE_REQUIRED naming the label that serves it.

const HEIGHT = 5_000_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;
/** A Substrate block hash that says its height, as the loopback Substrate node writes them (chain-answers.ts). */
const substrateHash = (height: number) => `0x${(height + 0xabc0_0000).toString(16).padStart(64, "0")}`;

/** An archive node's answers (json-rpc-interface-spec archive_v1_*); a full node has no such methods. */
const ARCHIVE: Record<string, TypicalAnswer> = {
  archive_v1_body: { result: () => ["0x280403000b207eb8b28c01"] },
  archive_v1_header: { result: () => "0x1234" },
  archive_v1_hashByHeight: { result: (_state, params) => [substrateHash(Number((params as unknown[])[0]))] },
  archive_v1_call: { result: () => ({ success: true, value: "0x0800" }) },
};

describe("Substrate archive_v1_* on the full label dot (loopback polkadot full and archive nodes)", () => {
  let full: LoopbackNode;
  let archive: LoopbackNode;
  let gw: RunningGateway;
  const asked = (node: LoopbackNode, method: string) =>
    node.requests.filter((r) => r.body.includes(`"method":"${method}"`)).length;
  const rpc = (key: string, method: string, params: unknown) =>
    gw.call("dot", `/${key}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method, params }),
      headers: { "content-type": "application/json" },
    });

  beforeAll(async () => {
    full = await startLoopbackNode(softwareNode(endpoint("dot"), nodeState(endpoint("dot"), HEIGHT), [""]));
    archive = await startLoopbackNode(
      softwareNode(endpoint("dot-archive"), nodeState(endpoint("dot-archive"), HEIGHT), [""], {
        answers: ARCHIVE,
      }),
    );
    gw = await startGateway({
      upstreams: {
        dot: [{ url: full.url, name: "full" }],
        "dot-archive": [{ url: archive.url, name: "archive" }],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      () => gw.gateway.upstreams.groups().every((g) => g.served.height === HEIGHT),
      5000,
      "both labels' served heads",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await full?.close();
    await archive?.close();
  });

  const recent = substrateHash(HEIGHT - 2);
  const calls: [string, unknown[]][] = [
    ["archive_v1_body", [recent]],
    ["archive_v1_header", [recent]],
    ["archive_v1_hashByHeight", [HEIGHT - 2]],
    ["archive_v1_call", [recent, "Core_version", "0x"]],
  ];

  for (const [method, params] of calls) {
    it(`${method} of a recent block is dot-archive's answer for an archive key`, async () => {
      const before = asked(archive, method);
      const answer = await rpc(KEYS.all, method, params);
      expect(answer.text).not.toContain("Method not found");
      expect((answer.json as { result?: unknown }).result).toBeDefined();
      expect(answer.headers["x-upstream-tier"]).toBe("archive");
      expect(asked(archive, method) - before).toBe(1);
    });
  }

  it("a key without archive access gets ARCHIVE_REQUIRED naming dot-archive, not the full node's refusal", async () => {
    const answer = await rpc(KEYS.noArchive, "archive_v1_body", [recent]);
    expect(answer.text).not.toContain("Method not found");
    expect(answer.json).toMatchObject({
      id: 9,
      error: { data: { code: "ARCHIVE_REQUIRED", archiveLabel: "dot-archive" } },
    });
  });
});
