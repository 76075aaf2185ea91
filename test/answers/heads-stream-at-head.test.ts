import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState } from "../support/software-node.js";
import { HEAD_ANSWERS } from "../support/typical-calls.js";

// A user who read level L+1 from /chains/main/blocks/head/header then opened GET /monitor/heads/main
// (tzkt, Taquito's streaming users, every indexer) and was told L as the stream's first head: the stream
// opened round robin on the node a level behind. Octez's heads stream first sends the node's current head,
// then each new one (octez src/lib_shell/monitor_directory.ml, `heads`: `first_call` returns
// `Store.Chain.current_head`), so it reads at the head (registry `reads.atHeadPaths`) and opens only on a
// node at the head the label served.

const xtz = endpointsByLabel.get("xtz") as Endpoint;
const L = 8_000_000;

/** An Octez node at `level`: the head header (prober, head call), and the heads stream. */
async function octez(level: number): Promise<{ url: string; server: Server; streams: number }> {
  const header = HEAD_ANSWERS["GET /chains/main/blocks/head/header"] as NonNullable<
    (typeof HEAD_ANSWERS)[string]
  >;
  const node = { url: "", server: undefined as unknown as Server, streams: 0 };
  node.server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    const body = JSON.stringify(header.result(nodeState(xtz, level), undefined));
    if (path === "/chains/main/blocks/head/header") {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (path === "/monitor/heads/main") {
      node.streams += 1;
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`${streamHead(level)}\n`);
      return; // kept open, as Octez keeps it
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => node.server.listen(0, "127.0.0.1", resolve));
  node.url = `http://127.0.0.1:${(node.server.address() as AddressInfo).port}`;
  return node;
}

/**
 * One element of Octez's heads stream: the block hash merged with its shell header and raw protocol data
 * (Monitor_services.heads: `merge_objs (obj1 (req "hash" Block_hash.encoding)) Block_header.encoding`).
 */
function streamHead(level: number): string {
  const full = (
    HEAD_ANSWERS["GET /chains/main/blocks/head/header"] as NonNullable<(typeof HEAD_ANSWERS)[string]>
  ).result(nodeState(xtz, level), undefined) as Record<string, unknown>;
  const { hash, predecessor, timestamp, validation_pass, operations_hash, fitness, context, proto } = full;
  return JSON.stringify({
    hash,
    level,
    proto,
    predecessor,
    timestamp,
    validation_pass,
    operations_hash,
    fitness,
    context,
    protocol_data: "0000000000000000",
  });
}

describe("Octez heads stream behind two nodes one level apart (loopback Octez)", () => {
  let nodes: Awaited<ReturnType<typeof octez>>[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all([L + 1, L].map(octez));
    gw = await startGateway({
      upstreams: { xtz: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "xtz");
  });
  afterAll(async () => {
    await gw?.close();
    for (const node of nodes ?? []) {
      node.server.closeAllConnections();
      node.server.close();
    }
  });

  it("after the header says L+1, 10 streams opened: each one's first head is never below L+1", async () => {
    const header = await gw.call("xtz", `/${KEYS.all}/chains/main/blocks/head/header`);
    expect((header.json as { level: number }).level).toBe(L + 1);
    const firsts: number[] = [];
    for (let i = 0; i < 10; i++) {
      const answer = await request(`${gw.origin}/${KEYS.all}/monitor/heads/main`, {
        headers: { host: `xtz.${DOMAIN}` },
      });
      expect(answer.statusCode).toBe(200);
      let text = "";
      for await (const chunk of answer.body) {
        text += (chunk as Buffer).toString("utf8");
        if (text.includes("\n")) break;
      }
      answer.body.destroy();
      firsts.push((JSON.parse(text.split("\n")[0] as string) as { level: number }).level);
    }
    expect(firsts.filter((level) => level < L + 1)).toEqual([]);
  });
});
