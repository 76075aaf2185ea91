import { connect, createServer, type Server, type Socket } from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedAnswers } from "../../src/cache/shared-answers.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { needOwnServerBinaries, type OwnRedis, startOwnRedis } from "../support/own-servers.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// docs/cache.md: a node whose head goes back below the label's finalized height takes every answer kept for
// the label with it, those shared through Redis too. A shared lookup sent before that and answered after it
// put the old chain's block back into the instance's cache, as final; and the clear's one SCAN, under the
// shared layer's 50 ms command timeout, failed silently on a slow Redis and left the old answers there for
// 24 hours. A lookup that lands after a clear is now dropped (answer-cache.ts `generation`), and a clear
// raises the label's generation in Redis, retried until Redis takes it, under which older answers are
// never read (shared-answers.ts `forget`).
const own = needOwnServerBinaries("redis");

/** A way to Redis that holds what the instances send for `holdMs` while it is set: a slow Redis. */
interface SlowWay {
  readonly url: string;
  holdMs: number;
  /** How many writes to Redis it has held. */
  held: number;
  readonly server: Server;
}

async function slowWay(port: number): Promise<SlowWay> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const redisSide = connect({ host: "127.0.0.1", port });
    for (const socket of [client, redisSide]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.once("close", () => {
        client.destroy();
        redisSide.destroy();
      });
    }
    // held in order, as TCP keeps it: a chunk never goes before one held before it, even once the hold is
    // shorter or off (bytes overtaking others would pair a command with another's reply, which no network
    // does; it once handed the clear's SCAN a PING's "PONG"): one queue, written in order as each is due
    const queue: { readonly due: number; readonly bytes: Buffer }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const drain = () => {
      timer = undefined;
      while (queue.length > 0 && (queue[0] as (typeof queue)[number]).due <= performance.now())
        redisSide.write((queue.shift() as (typeof queue)[number]).bytes);
      const next = queue[0];
      if (next !== undefined) timer = setTimeout(drain, Math.max(1, next.due - performance.now()));
    };
    client.on("data", (bytes: Buffer) => {
      if (way.holdMs > 0) way.held += 1;
      const last = queue.at(-1)?.due ?? 0;
      queue.push({ due: Math.max(performance.now() + way.holdMs, last), bytes });
      if (timer === undefined) drain();
    });
    redisSide.pipe(client);
  });
  server.on("close", () => {
    for (const socket of sockets) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const way: SlowWay = {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`,
    holdMs: 0,
    held: 0,
    server,
  };
  return way;
}

describe.skipIf(own.skip).each([
  // under the shared layer's 50 ms: the lookup lands after the clear began, with the old answer
  { holdMs: 30, slow: "a lookup lands after the clear" },
  // past it: the lookup and the clear fail
  { holdMs: 80, slow: "the clear fails at first" },
])("a chain gone back below finality while Redis is $holdMs ms slow ($slow)", ({ holdMs }) => {
  let node: Anvil;
  let redis: OwnRedis;
  let way: SlowWay;
  /** Redis itself, not through the slow way. */
  let admin: Redis;
  const shared: SharedAnswers[] = [];
  const gateways: RunningGateway[] = [];
  let restore: () => void;
  let snapshot: string;
  const options = () => ({
    upstreams: { eth: [{ url: node.url, name: "a" }] },
    // one probe at start (the finalized height, block 16 of 80), none in the test's window
    health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    cache: DEFAULT_CACHE,
  });
  const instance = async () => {
    const answers = new SharedAnswers({ redis: way.url, leaseMs: 100, fallbackShare: 1 });
    shared.push(answers);
    const gw = await startGateway({ ...options(), sharedAnswers: answers });
    gateways.push(gw);
    await eventually(() => answers.up, 5_000, "Redis connected");
    return { gw, answers };
  };
  const block = async (gw: RunningGateway, id: number) => {
    const answer = await gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBlockByNumber", params: ["0x5", false] }),
    });
    return (answer.json as { result: { hash: string } | null }).result;
  };

  beforeAll(async () => {
    restore = resolveTestHosts();
    node = await startAnvil({ chainId: 1 });
    snapshot = (await node.rpc("evm_snapshot", [])) as string;
    await node.rpc("anvil_mine", ["0x50"]);
    redis = await startOwnRedis();
    way = await slowWay(redis.port);
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    await Promise.all(gateways.map((gw) => gw.close()));
    for (const answers of shared) answers.close();
    admin?.disconnect();
    way?.server.close();
    await redis?.close();
    await node?.stop();
    restore?.();
  });

  it("no instance serves the old chain's block after the clear", async () => {
    const [a, b] = [await instance(), await instance()];
    await eventually(
      () => [a, b].every(({ gw }) => (gw.gateway.upstreams.group("eth", "/")?.finalized ?? -1) >= 16),
      5_000,
      "both know the finalized height",
    );
    expect((await block(a.gw, 1))?.hash).toMatch(/^0x/);
    await eventually(() => a.answers.counts.stored >= 1, 5_000, "a's answer stored in Redis");
    // the chain goes back to block 0, below the finalized 16: block 5 is no longer on it
    await node.rpc("evm_revert", [snapshot]);
    way.holdMs = holdMs;
    // b's lookup is on its way to Redis when b sees the head at 0 (a caller's head call) and clears
    const pending = block(b.gw, 2);
    // and a batch's, which looks its final calls up in Redis too
    const pendingBatch = b.gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 20, method: "eth_getBlockByNumber", params: ["0x5", false] },
        { jsonrpc: "2.0", id: 21, method: "eth_chainId", params: [] },
      ]),
    });
    // both lookups on their way: held by the slow Redis
    await eventually(() => way.held >= 2, 2_000, "the lookups sent to Redis");
    const head = await b.gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "eth_blockNumber", params: [] }),
    });
    expect((head.json as { result: string }).result).toBe("0x0");
    expect(await pending).toBeNull();
    const batch = (await pendingBatch).json as { id: number; result: unknown }[];
    expect(batch.find((answer) => answer.id === 20)?.result).toBeNull();
    way.holdMs = 0;
    // Redis answers again, and a clear that failed is retried until Redis has its new generation
    await eventually(
      async () => Number(await admin.get("gateway:answer:eth#generation")) >= 1,
      5_000,
      "the label's generation raised in Redis",
    );
    expect(await block(b.gw, 4)).toBeNull();
    // an instance that starts now finds nothing of the old chain in Redis
    const c = await instance();
    expect(await block(c.gw, 5)).toBeNull();
  });
});
