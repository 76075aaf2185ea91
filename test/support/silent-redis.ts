import { Redis } from "ioredis";
import { type OwnRedis, startOwnRedis } from "./own-servers.js";
import { startTcpForwarder, type TcpForwarder } from "./tcp-forwarder.js";

/**
 * A Redis of a test's own whose path can go silent: the code under test reaches it through a TCP forwarder
 * that can turn into a black hole (tcp-forwarder.ts), the test through a client of its own straight to it,
 * which the black hole does not reach.
 */
export interface SilenceableRedis {
  readonly redis: OwnRedis;
  readonly forwarder: TcpForwarder;
  /** Redis through the forwarder: what the code under test connects to. */
  readonly url: string;
  /** A client straight to Redis, which sees it whatever the forwarder does. */
  readonly admin: Redis;
  close(): Promise<void>;
}

export async function startSilenceableRedis(): Promise<SilenceableRedis> {
  const redis = await startOwnRedis();
  const forwarder = await startTcpForwarder(redis.port);
  const admin = new Redis(redis.url);
  return {
    redis,
    forwarder,
    url: `redis://127.0.0.1:${forwarder.port}`,
    admin,
    async close() {
      admin.disconnect();
      await forwarder.close();
      await redis.close();
    },
  };
}
