import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { SharedHeads } from "../../src/answers/shared-heads.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import type { UpstreamGroup } from "../../src/upstream/group.js";
import { UpstreamTable } from "../../src/upstream/upstreams.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { needServices, SHARED_REDIS_URL } from "../support/services.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// The served head shared by two gateway instances through Redis (docs/upstreams.md, "Answers across
// nodes"): a caller behind a load balancer, whose calls land on either, sees a rising head too. `a` reaches
// only the node ahead; `b` reaches both, and its prober last saw the one ahead a block lower than it is now.
// Redis database 7, so no other suite's heads mix with these.

const REDIS = `${SHARED_REDIS_URL}/7`;
const redis = await needServices("redis");
const algo = endpointsByLabel.get("algo") as Endpoint;
const H = 40_000_000;

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

describe.skipIf(redis.skip)(
  "the served head is shared across gateway instances through Redis (real Redis)",
  () => {
    let ahead: NodeState;
    let behind: NodeState;
    let nodes: LoopbackNode[];
    let heads: SharedHeads[];
    let a: RunningGateway;
    let b: RunningGateway;
    /** An instance whose one node is the one behind. */
    let c: RunningGateway;

    const status = async (gw: RunningGateway) =>
      ((await gw.call("algo", `/${KEYS.all}/v2/status`)).json as { "last-round": number })["last-round"];

    beforeAll(async () => {
      // a head an earlier run stored (kept 60 s) would stand for this run's
      const redisClient = new Redis(REDIS);
      await redisClient.del("gateway:head:algo");
      redisClient.disconnect();
      ahead = nodeState(algo, H + 1);
      behind = nodeState(algo, H);
      nodes = await Promise.all([
        startLoopbackNode(softwareNode(algo, () => ahead)),
        startLoopbackNode(softwareNode(algo, () => behind)),
      ]);
      const [aheadNode, behindNode] = nodes as [LoopbackNode, LoopbackNode];
      heads = [
        new SharedHeads({ redis: REDIS, leaseMs: 100, fallbackShare: 1 }),
        new SharedHeads({ redis: REDIS, leaseMs: 100, fallbackShare: 1 }),
        new SharedHeads({ redis: REDIS, leaseMs: 100, fallbackShare: 1 }),
      ];
      // one probe at the start, then none for the test's length: b's view of the node ahead stays a block old
      const health = { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 };
      a = await startGateway({
        upstreams: { algo: [{ url: aheadNode.url, name: "ahead" }] },
        health,
        heads: heads[0],
      });
      b = await startGateway({
        upstreams: {
          algo: [
            { url: behindNode.url, name: "behind" },
            { url: aheadNode.url, name: "ahead" },
          ],
        },
        health,
        heads: heads[1],
      });
      c = await startGateway({
        upstreams: { algo: [{ url: behindNode.url, name: "behind" }] },
        health,
        heads: heads[2],
      });
      for (const gw of [a, b, c]) await everyNodeInRotation(gw);
    });
    afterAll(async () => {
      await Promise.all([a?.close(), b?.close(), c?.close()]);
      await Promise.all((heads ?? []).map((h) => h.close()));
      await Promise.all((nodes ?? []).map((n) => n.close()));
    });

    it("a head one instance served holds the other's reads to it: the caller's head never goes back", async () => {
      ahead.height = H + 5;
      expect(await status(a)).toBe(H + 5);
      const served = () => b.gateway.upstreams.group("algo", "/")?.served.height;
      await eventually(() => served() === H + 5, 2000, "b's served head from a's answer");
      // b knows the node behind at H and the one ahead at H + 1: it waits for a node at H + 5, then asks the
      // highest, which has it
      const seen = [H + 5];
      for (let i = 0; i < 4; i++) seen.push(await status(i % 2 === 0 ? b : a));
      expect(seen.filter((h, i) => i > 0 && h < (seen[i - 1] as number))).toEqual([]);
    });

    it("an instance with one node waits for it too, rather than answering a head below the one served", async () => {
      ahead.height = H + 8;
      expect(await status(a)).toBe(H + 8);
      const served = () => c.gateway.upstreams.group("algo", "/")?.served.height;
      await eventually(() => served() === H + 8, 2000, "c's served head from a's answer");
      // c's one node was at H when probed; it catches up while c waits for it
      const answer = status(c);
      setTimeout(() => {
        behind.height = H + 8;
      }, 100);
      expect(await answer).toBe(H + 8);
      const waits = new Map(c.gateway.upstreams.group("algo", "/")?.answers.entries());
      expect(waits.get("head_wait")).toBe(1);
    });

    it("a deployment on another database of the same Redis hears none of these heads", async () => {
      // Redis' pub/sub spans databases: a staging deployment on /15 raised production's heads on /7
      const other = new SharedHeads({ redis: `${SHARED_REDIS_URL}/15`, leaseMs: 100, fallbackShare: 1 });
      const apart = groupOf("apart");
      other.attach([apart]);
      // one more on this deployment's database, which hears what the other must not
      const same = new SharedHeads({ redis: REDIS, leaseMs: 100, fallbackShare: 1 });
      const together = groupOf("together");
      same.attach([together]);
      try {
        await eventually(() => together.served.height === H + 8, 2000, "the stored head read");
        // both listening: a head published before then would be missed whatever the channel
        const admin = new Redis(REDIS);
        const listeners = async (channel: string) => (await admin.pubsub("NUMSUB", channel))[1] as number;
        try {
          await eventually(
            async () =>
              (await listeners("gateway:heads:15")) >= 1 && (await listeners("gateway:heads:7")) >= 4,
            2000,
            "both instances subscribed",
          );
        } finally {
          admin.disconnect();
        }
        ahead.height = H + 12;
        expect(await status(a)).toBe(H + 12);
        await eventually(() => together.served.height === H + 12, 2000, "the head heard on database 7");
        expect(apart.served.height).toBe(-1);
      } finally {
        await Promise.all([other.close(), same.close()]);
      }
    });

    it("an instance told of a higher head asks its nodes for theirs at once, not at its next probe a minute on", async () => {
      const group = () => b.gateway.upstreams.group("algo", "/");
      const inVain = () => new Map(group()?.answers.entries()).get("head_wait_in_vain") ?? 0;
      const before = inVain();
      ahead.height = H + 14;
      expect(await status(a)).toBe(H + 14);
      await eventually(() => group()?.served.height === H + 14, 2000, "b's served head from a's answer");
      // b last probed the node ahead below H + 14: its read waits for a node there, and asking the nodes now
      // finds the one ahead at it, rather than the wait running out (about a block) and the highest asked
      expect(await status(b)).toBe(H + 14);
      expect(inVain()).toBe(before);
    });
  },
);
