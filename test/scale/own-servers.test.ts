import pg from "pg";
import { describe, expect, it } from "vitest";
import { needOwnServerBinaries, startOwnPostgres, startOwnRedis } from "../support/own-servers.js";
import { pingRedis, probeServices, selectOne, servicesAnswer } from "../support/services.js";

// Asked before any server of this file starts: the shared servers that answered then must answer at the end.
const sharedBefore = await servicesAnswer();
const redisBinaries = needOwnServerBinaries("redis");
const postgresBinaries = needOwnServerBinaries("postgres");

/** Whether a process with this id exists (signal 0 checks without signalling). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function query(url: string, text: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

describe.skipIf(redisBinaries.skip)("a Redis server of the test's own", () => {
  it("answers PING, refuses connections after stop() and answers on the same port after start()", async () => {
    const redis = await startOwnRedis();
    try {
      expect(redis.port).not.toBe(6379);
      expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`);
      await pingRedis(redis.port);
      const first = redis.pid;

      await redis.stop();
      expect(alive(first)).toBe(false);
      await expect(pingRedis(redis.port)).rejects.toThrow();

      await redis.start();
      expect(redis.pid).not.toBe(first);
      await pingRedis(redis.port);
    } finally {
      await redis.close();
    }
    expect(alive(redis.pid)).toBe(false);
  });
});

describe.skipIf(postgresBinaries.skip)("a PostgreSQL server of the test's own", () => {
  it("answers SELECT 1, refuses connections after stop() and keeps its tables across start()", async () => {
    const postgres = await startOwnPostgres();
    try {
      expect(postgres.port).not.toBe(5432);
      expect(postgres.url).toBe(`postgres://postgres@127.0.0.1:${postgres.port}/postgres`);
      await selectOne(postgres.url);
      await query(postgres.url, "CREATE TABLE kept (note text)");
      await query(postgres.url, "INSERT INTO kept VALUES ('written before stop')");
      const first = postgres.pid;

      await postgres.stop();
      expect(alive(first)).toBe(false);
      await expect(selectOne(postgres.url)).rejects.toThrow();

      await postgres.start();
      expect(postgres.pid).not.toBe(first);
      expect(await query(postgres.url, "SELECT note FROM kept")).toEqual([{ note: "written before stop" }]);
    } finally {
      await postgres.close();
    }
    expect(alive(postgres.pid)).toBe(false);
  }, 60_000);
});

// Stopping and restarting servers of its own must never reach the machine's shared ones, which other test
// processes use.
describe("the shared servers, after the own servers stopped and started", () => {
  it.skipIf(sharedBefore.postgres !== undefined)("PostgreSQL on 5432 still answers", async () => {
    expect((await probeServices()).postgres).toBeUndefined();
  });

  it.skipIf(sharedBefore.redis !== undefined)("Redis on 6379 still answers", async () => {
    expect((await probeServices()).redis).toBeUndefined();
  });
});
