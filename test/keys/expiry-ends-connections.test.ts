import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyHash } from "../../src/keys/digest.js";
import type { GrantFeed, KeyGrant } from "../../src/keys/grants.js";
import { CachedKeyStore } from "../../src/keys/key-cache.js";
import { DOMAIN, type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A key that expires (a free test's end, a rotated key's grace: docs/accounts.md) is refused from then on,
// and what it opened before ends then too, as a revoked key's does: the key cache tells its withdrawal
// listeners at the expiry (the proxy closes the key's WebSockets and cuts its streams, proxy/run.ts). A
// socket opened before used to be served for as long as its client held it.

const EXPIRING = "FNexpires00000000000000000000";
const STAYING = "FNstaying00000000000000000000";
const RATE = { perSecond: 1e4, burst: 1e4 };

describe("a key's expiry ends what it opened", () => {
  let node: LoopbackNode;
  let ws: LoopbackWsNode;
  let gw: RunningGateway;
  let keys: CachedKeyStore;
  let restore: () => void = () => {};
  const withdrawn: string[] = [];
  const expiresAt = Date.now() + 1_500;
  const grant = (id: number, key: string, expires: number | undefined): KeyGrant => ({
    id,
    accountId: 1,
    keyHash: keyHash(key),
    prefix: key.slice(0, 8),
    plan: "shared",
    networks: "*",
    archive: false,
    rate: RATE,
    status: "active",
    expiresAt: expires,
    accountStatus: "active",
    revision: id,
    settings: undefined,
    quotaScope: key.slice(0, 8),
  });
  const feed: GrantFeed = {
    changesSince: async (revision) => ({
      revision: 2,
      grants: revision < 2 ? [grant(1, EXPIRING, expiresAt), grant(2, STAYING, undefined)] : [],
    }),
    watch: () => () => {},
    close: async () => {},
  };

  beforeAll(async () => {
    node = await startLoopbackNode(jsonRpcResponder({ eth_chainId: "0x1" }));
    ws = await startLoopbackWsNode({ results: { eth_chainId: "0x1" } });
    restore = resolveTestHosts();
    keys = await CachedKeyStore.open(feed, RATE);
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: ws.wsUrl }] },
      keys: [],
      keyStore: keys,
    });
    // as the proxy wires it (proxy/run.ts)
    keys.onWithdrawn((keyId) => {
      withdrawn.push(keyId);
      gw.gateway.closeConnectionsOf(keyId);
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await keys?.close();
    await Promise.all([node?.close(), ws?.close()]);
  });

  it("closes the key's WebSocket at its expiry; another key's stays open", async () => {
    const expiring = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${EXPIRING}`);
    const staying = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${STAYING}`);
    expect(await expiring.call("eth_chainId")).toMatchObject({ result: "0x1" });
    const closed = await expiring.closed;
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
    expect(closed.code).toBe(1008);
    expect(withdrawn).toEqual([EXPIRING.slice(0, 8)]);
    expect((await gw.call("eth", `/${EXPIRING}`, { body: rpcBody("eth_chainId") })).status).toBe(401);
    expect(staying.isOpen).toBe(true);
    expect(await staying.call("eth_chainId")).toMatchObject({ result: "0x1" });
    staying.close();
  });
});
