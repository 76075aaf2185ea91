import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import {
  type LoopbackWsNode,
  startLoopbackWsNode,
  substrateNode,
  WsRpcError,
} from "../support/loopback-ws-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// What a user could see over a WebSocket on a Substrate label: a pruned node's own refusal of old state
// (polkadot's 4003 "State already discarded") in place of dot-archive's answer, or that answer given to a key
// without archive access. The node's refusal sends the read, alone or beside a new one in a batch, to the
// archive nodes for an archive key; any other key gets ARCHIVE_REQUIRED, as over HTTP.
const OLD = `0x${"11".repeat(32)}`;
const NEW = `0x${"22".repeat(32)}`;

describe("dot over WebSocket: state a pruned node discarded (polkadot's 4003 text)", () => {
  let full: LoopbackWsNode;
  let archive: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void;
  beforeAll(async () => {
    restore = resolveTestHosts();
    const base = substrateNode();
    full = await startLoopbackWsNode({
      ...base,
      results: {
        ...base.results,
        state_getStorage: (params: unknown) => {
          if ((params as unknown[])[1] === OLD)
            throw new WsRpcError(4003, `Client error: UnknownBlock: State already discarded for ${OLD}`);
          return "0x0100";
        },
      },
    });
    const e = endpointsByLabel.get("dot-archive") as Endpoint;
    archive = await startLoopbackNode(
      softwareNode(e, nodeState(e, 100), [""], { answers: { state_getStorage: { result: () => "0x0200" } } }),
    );
    gw = await startGateway({
      upstreams: { dot: [full.url], "dot-archive": [archive.url] },
      health: { ...DEFAULT_HEALTH },
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await full?.close();
    await archive?.close();
    restore?.();
  });

  it("archive key: the archive's answer, alone and in a batch beside a new read; no key: ARCHIVE_REQUIRED", async () => {
    const ws = await Client.open(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.all}`);
    expect((await ws.call("state_getStorage", ["0x26aa", OLD])).result).toBe("0x0200");
    ws.send(
      JSON.stringify([
        { jsonrpc: "2.0", id: "old", method: "state_getStorage", params: ["0x26aa", OLD] },
        { jsonrpc: "2.0", id: "new", method: "state_getStorage", params: ["0x26aa", NEW] },
      ]),
    );
    const batch = JSON.parse(await ws.waitFor((t) => t.includes('"old"'))) as {
      id: string;
      result?: string;
    }[];
    expect(batch.find((x) => x.id === "old")?.result).toBe("0x0200");
    expect(batch.find((x) => x.id === "new")?.result).toBe("0x0100");
    ws.close();
    const no = await Client.open(`ws://dot.${DOMAIN}:${gw.port}/${KEYS.noArchive}`);
    const r = await no.call("state_getStorage", ["0x26aa", OLD]);
    expect(JSON.stringify(r)).toContain("ARCHIVE_REQUIRED");
    expect(JSON.stringify(r)).not.toContain("0x0200");
    no.close();
    const http = await gw.call("dot", `/${KEYS.noArchive}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "state_getStorage", params: ["0x26aa", OLD] }),
      headers: { "content-type": "application/json" },
    });
    expect(http.status).toBe(403);
  });
});
