import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedAnswers } from "../../src/cache/shared-answers.js";
import { eventually } from "../support/eventually.js";
import { needOwnServerBinaries } from "../support/own-servers.js";
import { type SilenceableRedis, startSilenceableRedis } from "../support/silent-redis.js";

// A proxy whose path to Redis goes silent: the Redis host dies or the network splits, and no FIN or RST
// reaches it (test/support/tcp-forwarder.ts, between SharedAnswers and this test's own Redis, drops every
// byte and closes nothing; once restored, it carries new connections while the old ones stay silent).
// The shared answers' connection never closed by itself: every lookup timed out (50 ms), and after Redis
// was back no instance read another's final answer again, each asking its nodes for what the others had.
// And the other side: a lookup that times out on a busy Redis that still answers keeps its connection.

const binaries = needOwnServerBinaries("redis");
/**
 * Once the path is back: a lookup's 50 ms, the PING's 1 s that confirms the silence, a reconnection begun
 * in the dark waiting out its 2 s connect timeout, the next within the backoff's 5 s, and slack for a
 * loaded host.
 */
const BACK_WITHIN_MS = 20_000;

const entry = (text: string) => ({
  before: Buffer.from(`{"jsonrpc":"2.0","id":`),
  after: Buffer.from(`,"result":"${text}"}`),
  tier: "full" as const,
});

describe.skipIf(binaries.skip)("shared answers whose path to Redis turns into a black hole", () => {
  let silent: SilenceableRedis;
  let answers: SharedAnswers | undefined;
  let other: SharedAnswers | undefined;

  beforeAll(async () => {
    silent = await startSilenceableRedis();
  }, 30_000);
  afterAll(async () => {
    answers?.close();
    other?.close();
    await silent?.close();
  });

  it("reads another instance's answers again once the path is back", async () => {
    const prefix = `black-hole-${process.pid}-${Date.now()}:`;
    answers = new SharedAnswers({ redis: silent.url, leaseMs: 100, fallbackShare: 1 }, prefix);
    // another instance, on a path of its own that stays up
    other = new SharedAnswers({ redis: silent.redis.url, leaseMs: 100, fallbackShare: 1 }, prefix);
    await eventually(() => answers?.up === true && other?.up === true, 10_000, "both connected");
    // an answer put before memory is known is not shared: put until it is
    await eventually(
      async () => {
        other?.put("algo", "before", entry("0x1"));
        return (await answers?.get("algo", "before")) !== undefined;
      },
      10_000,
      "an answer shared before the outage",
    );

    silent.forwarder.blackHole();
    // lookups in the dark time out
    expect(await answers.get("algo", "before")).toBeUndefined();
    silent.forwarder.restore();

    await eventually(
      async () => {
        other?.put("algo", "after", entry("0x2"));
        return (await answers?.get("algo", "after"))?.after.toString() === `,"result":"0x2"}`;
      },
      BACK_WITHIN_MS,
      "another instance's answer read after the path is back",
    );
  }, 60_000);

  it("clears a scope in the dark and reads its answers again once the path is back", async () => {
    const prefix = `black-hole-clear-${process.pid}-${Date.now()}:`;
    const here = new SharedAnswers({ redis: silent.url, leaseMs: 100, fallbackShare: 1 }, prefix);
    const there = new SharedAnswers({ redis: silent.redis.url, leaseMs: 100, fallbackShare: 1 }, prefix);
    try {
      await eventually(() => here.up && there.up, 10_000, "both connected");
      silent.forwarder.blackHole();
      // the label's chain went back under its finalized blocks while the path was silent: this instance
      // reads and stores none of the scope's answers until Redis has taken the clear, its only calls
      here.forget("algo");
      await eventually(() => here.counts.error > 0, 5_000, "the clear timed out in the dark");
      silent.forwarder.restore();
      await eventually(
        async () => {
          // the other instance's lookup reads the scope's generation as Redis holds it now, and its put
          // stores under it (one it stored under before this clear was taken is cleared)
          await there.get("algo", "after-clear");
          there.put("algo", "after-clear", entry("0x3"));
          return (await here.get("algo", "after-clear")) !== undefined;
        },
        BACK_WITHIN_MS,
        "the scope's answers read again after the path is back",
      );
    } finally {
      here.close();
      there.close();
    }
  }, 60_000);

  it("keeps its connection when a lookup times out on a Redis that answers", async () => {
    const prefix = `busy-${process.pid}-${Date.now()}:`;
    const busy = new SharedAnswers({ redis: silent.redis.url, leaseMs: 100, fallbackShare: 1 }, prefix);
    try {
      await eventually(() => busy.up, 10_000, "connected");
      // each connection's id: one made anew has a new one
      const clients = async () =>
        ((await silent.admin.client("LIST")) as string)
          .split("\n")
          .map((line) => /^id=(\d+)/.exec(line)?.[1])
          .filter((id) => id !== undefined)
          .sort();
      const before = await clients();
      // Redis holds every client's commands for 300 ms: past a lookup's 50 ms, within the PING's 1 s
      await silent.admin.call("CLIENT", "PAUSE", "300", "ALL");
      const lookups = await Promise.all([busy.get("algo", "a"), busy.get("algo", "b")]);
      expect(lookups).toEqual([undefined, undefined]);
      expect(busy.counts.error).toBeGreaterThan(0);
      // the PING that followed was answered once Redis woke: the connection stays as it was
      await eventually(
        async () => (await busy.get("algo", "c")) === undefined && busy.counts.miss > 0,
        5_000,
        "a lookup answered",
      );
      expect(busy.up).toBe(true);
      expect(await clients()).toEqual(before);
    } finally {
      busy.close();
    }
  }, 30_000);
});
