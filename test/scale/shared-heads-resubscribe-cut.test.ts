import { connect, createServer, type Server, type Socket } from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedHeads } from "../../src/answers/shared-heads.js";
import { eventually } from "../support/eventually.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";

// The shared heads' subscriber loses its connection (CLIENT KILL TYPE pubsub, a Redis restart), connects
// again, and loses that connection too before Redis answered its SUBSCRIBE: what a storm of killed
// connections or a Redis going down twice does (test/scale/stores-cut-under-load.test.ts ended a proxy
// so). A relay of this test's own stands between SharedHeads and this test's own Redis, and cuts the
// connection that carries the next SUBSCRIBE, before Redis sees it. Every SUBSCRIBE sent then fails; one
// failure nothing handles fails this run as an unhandled rejection, as it ends a proxy.

const binaries = needOwnServerBinaries("redis");
const CHANNEL = "gateway:heads:0";

describe.skipIf(binaries.skip)("shared heads whose subscriber is cut again as it resubscribes", () => {
  let redis: OwnRedis;
  let admin: Redis;
  let relay: Server;
  let relayUrl = "";
  let cutNextSubscribe = false;
  let cuts = 0;
  const sockets = new Set<Socket>();

  const subscribers = async () => {
    const [, count] = (await admin.call("PUBSUB", "NUMSUB", CHANNEL)) as [string, number];
    return Number(count);
  };

  beforeAll(async () => {
    redis = await startOwnRedis();
    admin = new Redis(redis.url);
    relay = createServer((client) => {
      const server = connect(redis.port, "127.0.0.1");
      for (const socket of [client, server]) {
        sockets.add(socket);
        socket.on("error", () => {});
        socket.once("close", () => sockets.delete(socket));
      }
      client.once("close", () => server.destroy());
      server.once("close", () => client.destroy());
      server.on("data", (chunk: Buffer) => client.write(chunk));
      client.on("data", (chunk: Buffer) => {
        if (cutNextSubscribe && /subscribe/i.test(chunk.toString("latin1"))) {
          cutNextSubscribe = false;
          cuts += 1;
          client.destroy();
          return;
        }
        server.write(chunk);
      });
    });
    await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
    relayUrl = `redis://127.0.0.1:${(relay.address() as { port: number }).port}`;
  }, 30_000);
  afterAll(async () => {
    admin?.disconnect();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => relay?.close(resolve));
    await redis?.close();
  });

  it("subscribes again once a connection lets it, and nothing goes unhandled meanwhile", async () => {
    const heads = new SharedHeads({ redis: relayUrl, leaseMs: 100, fallbackShare: 1 });
    try {
      await eventually(async () => (await subscribers()) === 1, 10_000, "subscribed");
      cutNextSubscribe = true;
      await admin.call("CLIENT", "KILL", "TYPE", "pubsub");
      await eventually(() => cuts === 1, 10_000, "the resubscription cut");
      await eventually(async () => (await subscribers()) === 1, 10_000, "subscribed again");
      expect(cuts).toBe(1);
    } finally {
      await heads.close();
    }
  }, 30_000);
});
