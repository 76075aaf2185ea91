import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { SharedHeads } from "../../src/answers/shared-heads.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { UpstreamGroup } from "../../src/upstream/group.js";
import { UpstreamTable } from "../../src/upstream/upstreams.js";
import { eventually } from "../support/eventually.js";
import { needOwnServerBinaries } from "../support/own-servers.js";
import { type SilenceableRedis, startSilenceableRedis } from "../support/silent-redis.js";

// A proxy whose path to Redis goes silent: the Redis host dies or the network splits, and no FIN or RST
// reaches it (test/support/tcp-forwarder.ts, between SharedHeads and this test's own Redis, drops every
// byte and closes nothing; once restored, it carries new connections while the old ones stay silent).
// The shared heads' two connections never closed by themselves: the subscriber, which sends nothing,
// heard no other instance's head again, and the connection storing the rises failed each one, for good
// after Redis was back: a caller behind a balancer saw the head go back again.

const binaries = needOwnServerBinaries("redis");
const H = 40_000_000;
/**
 * Once the path is back: a subscriber PING every 2 s, its 1 s timeout and the PING that confirms it, a
 * reconnection begun in the dark waiting out its 2 s connect timeout, the next within the backoff's 5 s,
 * and slack for a loaded host.
 */
const BACK_WITHIN_MS = 20_000;

/** An algo group of a gateway that is not started: what a deployment's SharedHeads would be given. */
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

describe.skipIf(binaries.skip)("shared heads whose path to Redis turns into a black hole", () => {
  let silent: SilenceableRedis;
  let heads: SharedHeads | undefined;

  beforeAll(async () => {
    silent = await startSilenceableRedis();
  }, 30_000);
  afterAll(async () => {
    await heads?.close();
    await silent?.close();
  });

  it("hears and stores heads again once the path is back", async () => {
    heads = new SharedHeads({ redis: silent.url, leaseMs: 100, fallbackShare: 1 });
    const group = groupOf("behind-the-hole");
    heads.attach([group]);
    const subscribers = async () => Number((await silent.admin.pubsub("NUMSUB", "gateway:heads:0"))[1]);
    await eventually(async () => (await subscribers()) === 1, 10_000, "listening");
    await silent.admin.publish("gateway:heads:0", `algo ${H}`);
    await eventually(() => group.served.height === H, 5_000, "a head heard");

    silent.forwarder.blackHole();
    // a rise in the dark fails to be stored: the connection that stores them is silent too
    group.served.raise(H + 1);
    silent.forwarder.restore();

    // another instance's head, published until this one hears it
    let published = H + 1;
    const heard = await eventually(
      async () => {
        published += 1;
        await silent.admin.publish("gateway:heads:0", `algo ${published}`);
        return group.served.height >= H + 2;
      },
      BACK_WITHIN_MS,
      "another instance's head heard after the path is back",
    );
    // and its own rises are stored again
    await eventually(
      async () => {
        group.served.raise(published + 1);
        return Number(await silent.admin.get("gateway:head:algo")) === published + 1;
      },
      BACK_WITHIN_MS,
      "its own rise stored after the path is back",
    );
    console.log(`heads heard again ${heard.toFixed(0)} ms after the path to Redis was back`);
    expect(group.served.height).toBe(published + 1);
  }, 60_000);
});
