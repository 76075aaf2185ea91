import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { UpstreamGroup } from "../../src/upstream/group.js";
import type { HandleShare } from "../../src/upstream/node-states.js";
import { SharedHandles } from "../../src/upstream/shared-handles.js";
import { UpstreamTable } from "../../src/upstream/upstreams.js";
import { eventually } from "../support/eventually.js";
import { needOwnServerBinaries } from "../support/own-servers.js";
import { type SilenceableRedis, startSilenceableRedis } from "../support/silent-redis.js";

// A proxy whose path to Redis goes silent: the Redis host dies or the network splits, and no FIN or RST
// reaches it (test/support/tcp-forwarder.ts, between SharedHandles and this test's own Redis, drops every
// byte and closes nothing; once restored, it carries new connections while the old ones stay silent).
// The shared handles' connection never closed by itself: every recall timed out, and after Redis was back
// a filter made through another instance was still unknown here, its polls refused or sent to the wrong
// node, for good.

const binaries = needOwnServerBinaries("redis");
/**
 * Once the path is back: a recall's 1 s timeout, the PING's 1 s that confirms the silence, a reconnection
 * begun in the dark waiting out its 2 s connect timeout, the next within the backoff's 5 s, and slack for
 * a loaded host.
 */
const BACK_WITHIN_MS = 20_000;

/** An algo group of a gateway that is not started: what a deployment's SharedHandles would be given. */
function groupOf(name: string) {
  const table = new UpstreamTable(
    {
      upstreams: { algo: [{ url: "http://127.0.0.1:9", name }] },
      limits: DEFAULT_LIMITS,
      health: DEFAULT_HEALTH,
    },
    endpointsByLabel,
    () => ({}) as never,
    () => {},
  );
  return table.group("algo", "/") as UpstreamGroup;
}

describe.skipIf(binaries.skip)("shared handles whose path to Redis turns into a black hole", () => {
  let silent: SilenceableRedis;
  let handles: SharedHandles | undefined;
  let other: SharedHandles | undefined;

  beforeAll(async () => {
    silent = await startSilenceableRedis();
  }, 30_000);
  afterAll(async () => {
    handles?.close();
    other?.close();
    await silent?.close();
  });

  it("recalls another instance's filters again once the path is back", async () => {
    const owner = `owner-${process.pid}-${Date.now()}`;
    handles = new SharedHandles({
      redis: silent.url,
      leaseMs: 100,
      fallbackShare: 1,
    });
    // another instance, on a path of its own that stays up
    other = new SharedHandles({ redis: silent.redis.url, leaseMs: 100, fallbackShare: 1 });
    expect(await handles.ready(10_000)).toBe(true);
    expect(await other.ready(10_000)).toBe(true);
    const here = groupOf("behind-the-hole");
    const there = groupOf("elsewhere");
    handles.attach([here]);
    other.attach([there]);
    const mine = here.states.share as HandleShare;
    const theirs = there.states.share as HandleShare;

    theirs.made(owner, "0x1", "elsewhere", undefined);
    await eventually(
      async () => (await mine.recall(owner, ["0x1"]))[0]?.node === "elsewhere",
      5_000,
      "a filter recalled before the outage",
    );

    silent.forwarder.blackHole();
    // a recall in the dark fails
    await expect(mine.recall(owner, ["0x1"])).rejects.toThrow();
    silent.forwarder.restore();

    let made = 1;
    await eventually(
      async () => {
        made += 1;
        const name = `0x${made.toString(16)}`;
        theirs.made(owner, name, "elsewhere", undefined);
        const recalled = await mine.recall(owner, [name]).catch(() => []);
        return recalled[0]?.node === "elsewhere";
      },
      BACK_WITHIN_MS,
      "another instance's filter recalled after the path is back",
    );
  }, 60_000);
});
