import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import type { TypicalAnswer } from "../support/typical-calls.js";
import { Client } from "../support/ws-client.js";

// What a user could see over a WebSocket on labels whose nodes have no WebSocket server (ton, near: each
// message goes to the node over HTTP): an old masterchain block or a garbage-collected NEAR block answered
// with the full node's raw "not in db" or "garbage collected" error instead of the archive's answer (an
// archive key) or ARCHIVE_REQUIRED (any other key).
const WINDOW = 1_000;
const HEIGHT = 5_000_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

const blockHeader = (pruned: boolean): TypicalAnswer => ({
  result: (_state, params) => ({
    "@type": "blocks.header",
    id: {
      "@type": "ton.blockIdExt",
      workchain: -1,
      shard: "-9223372036854775808",
      seqno: Number((params as { seqno?: unknown }).seqno),
    },
  }),
  ...(pruned
    ? {
        missing: (state: NodeState, params?: unknown) =>
          Number((params as { seqno?: unknown }).seqno) < state.height - WINDOW,
      }
    : {}),
});
const query = (pruned: boolean): TypicalAnswer => ({
  result: (state, params) => ({
    amount: "1",
    locked: "0",
    code_hash: "11111111111111111111111111111111",
    storage_usage: 182,
    storage_paid_at: 0,
    block_height: (params as { block_id?: number }).block_id ?? state.height,
    block_hash: "5mzY6JkVd2zK8T9HxR3o4bM5fN7qW2eY1uP9aS3dF6gH",
  }),
  ...(pruned
    ? {
        missing: (state: NodeState, params?: unknown) => {
          const id = (params as { block_id?: unknown }).block_id;
          return typeof id === "number" && id < state.height - WINDOW;
        },
      }
    : {}),
});

describe("old reads over a WebSocket on labels whose nodes have no WebSocket server (ton, near)", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;
  let restore: () => void;

  beforeAll(async () => {
    restore = resolveTestHosts();
    for (const label of ["ton", "ton-archive", "near", "near-archive"]) {
      const e = endpoint(label);
      const pruned = !label.endsWith("-archive");
      nodes.set(
        label,
        await startLoopbackNode(
          softwareNode(e, nodeState(e, HEIGHT), [""], {
            answers: {
              getBlockHeader: blockHeader(pruned),
              query: query(pruned),
              EXPERIMENTAL_view_account: query(pruned),
            },
          }),
        ),
      );
    }
    gw = await startGateway({
      upstreams: Object.fromEntries(
        [...nodes].map(([label, node]) => [label, [{ url: node.url, name: label }]]),
      ),
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      () => gw.gateway.upstreams.groups().every((g) => g.served.height === HEIGHT),
      5000,
      "heads",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
    restore?.();
  });

  const header = { workchain: -1, shard: "-9223372036854775808", seqno: HEIGHT - 5_000 };

  it("ton: archive key gets ton-archive's answer", async () => {
    const client = await Client.open(`ws://ton.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const a = await client.call("getBlockHeader", header);
      expect(JSON.stringify(a)).not.toContain("not in db");
      expect(a).toMatchObject({ ok: true, result: { id: { seqno: HEIGHT - 5_000 } } });
    } finally {
      client.close();
    }
  });

  it("ton: key without archive access gets ARCHIVE_REQUIRED, not the liteserver's error", async () => {
    const client = await Client.open(`ws://ton.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    try {
      const a = await client.call("getBlockHeader", header);
      expect(JSON.stringify(a)).not.toContain("not in db");
      expect(JSON.stringify(a)).toContain("ARCHIVE_REQUIRED");
    } finally {
      client.close();
    }
  });

  it("near: archive key gets near-archive's answer for a GC'd block, query and view_account", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const q = await client.call("query", {
        request_type: "view_account",
        account_id: "a.near",
        block_id: HEIGHT - 5_000,
      });
      expect(q).toMatchObject({ result: { block_height: HEIGHT - 5_000 } });
      const v = await client.call("EXPERIMENTAL_view_account", {
        account_id: "a.near",
        block_id: HEIGHT - 5_000,
      });
      expect(JSON.stringify(v)).not.toContain("garbage collected");
      expect(v).toMatchObject({ result: { block_height: HEIGHT - 5_000 } });
    } finally {
      client.close();
    }
  });

  it("near: key without archive access gets ARCHIVE_REQUIRED", async () => {
    const client = await Client.open(`ws://near.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    try {
      const q = await client.call("query", {
        request_type: "view_account",
        account_id: "a.near",
        block_id: HEIGHT - 5_000,
      });
      expect(JSON.stringify(q)).toContain("ARCHIVE_REQUIRED");
      const v = await client.call("EXPERIMENTAL_view_account", {
        account_id: "a.near",
        block_id: HEIGHT - 5_000,
      });
      expect(JSON.stringify(v)).not.toContain("garbage collected");
      expect(JSON.stringify(v)).toContain("ARCHIVE_REQUIRED");
    } finally {
      client.close();
    }
  });
});
