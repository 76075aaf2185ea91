import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import type { TypicalAnswer } from "../support/typical-calls.js";
import { Client } from "../support/ws-client.js";

// A WebSocket connection's call is answered with the caller's own id, as sent (docs/cache.md, "WebSockets";
// JSON-RPC 2.0 §5: the same value as the request's id). ton-http-api answers every id as text over HTTP, and
// so does a kept answer given to an HTTP caller (registry `idAsText`). Over the label's WebSocket (the
// gateway's own: the node has none, the relay asks it over HTTP), a call that missed got its number id back
// (7), and the same call answered from the cache, or waiting on an identical call in flight, got it as text
// ("8"): a client matching answers by id (test/support/ws-client.ts, as any JSON-RPC client) never saw it.

const HEIGHT = 40_000_000;
const MASTER_SHARD = "-9223372036854775808";

describe("a kept answer on toncenter's WebSocket carries the caller's id as it sent it", () => {
  const endpoint = endpointsByLabel.get("ton") as Endpoint;
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  /** Holds the node's getBlockHeader answers until the test lets them go. */
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const answers: Record<string, TypicalAnswer> = {
    // ton-http-api's getBlockHeader: tonlib's blocks.header of the block named
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
          gen_utime: 1_700_000_000 + seqno * 5,
          start_lt: String(seqno * 1_000_000),
          end_lt: String(seqno * 1_000_000 + 4),
          "@extra": "1700000000.5:0:0.25",
        };
      },
    },
  };

  beforeAll(async () => {
    restore = resolveTestHosts();
    const serve = softwareNode(endpoint, nodeState(endpoint, HEIGHT), [""], { answers });
    node = await startLoopbackNode(async (request) => {
      if (request.body.includes('"getBlockHeader"')) await held;
      return serve(request);
    });
    gw = await startGateway({
      upstreams: { ton: [node.url] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 30_000 },
    });
    await everyNodeInRotation(gw, "ton");
  });
  afterAll(async () => {
    release();
    await gw?.close();
    await node?.close();
    restore?.();
  });

  it("from the cache: the number id it sent, as on a miss", async () => {
    const client = await Client.open(`ws://ton.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const missed = await client.call("getMasterchainInfo", {});
      expect(missed.result).toBeDefined();
      const kept = await client.call("getMasterchainInfo", {});
      expect((kept.result as { last: { seqno: number } }).last.seqno).toBe(HEIGHT);
      // an HTTP caller still gets the node's own form
      const http = await gw.call("ton", `/${KEYS.all}`, { body: rpcBody("getMasterchainInfo", {}, 9) });
      expect(http.headers["x-cache"]).toBe("hit");
      expect((http.json as { id: unknown }).id).toBe("9");
    } finally {
      client.close();
    }
  });

  it("waiting on an HTTP caller's identical call in flight: its own number id too", async () => {
    const client = await Client.open(`ws://ton.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const params = { workchain: -1, shard: MASTER_SHARD, seqno: HEIGHT - 10 };
      // a caller with no archive access: a connection's call waits only on such a call (docs/cache.md)
      const first = gw.call("ton", `/${KEYS.noArchive}`, { body: rpcBody("getBlockHeader", params, 1) });
      await eventually(
        () => node.requests.some((r) => r.body.includes('"getBlockHeader"')),
        3_000,
        "the HTTP call at the node",
      );
      const waiting = client.call("getBlockHeader", params);
      await eventually(
        async () => (await gw.metric("gateway_cache_waiting", { label: "ton" })) >= 1,
        3_000,
        "the WebSocket call waiting",
      );
      release();
      const [, answer] = await Promise.all([first, waiting]);
      expect((answer.result as { id: { seqno: number } }).id.seqno).toBe(HEIGHT - 10);
      expect(node.requests.filter((r) => r.body.includes('"getBlockHeader"'))).toHaveLength(1);
    } finally {
      client.close();
    }
  });
});
