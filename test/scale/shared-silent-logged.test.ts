import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { SharedHeads } from "../../src/answers/shared-heads.js";
import { SharedAnswers } from "../../src/cache/shared-answers.js";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { createLogger } from "../../src/log.js";
import type { UpstreamGroup } from "../../src/upstream/group.js";
import type { HandleShare } from "../../src/upstream/node-states.js";
import { SharedHandles } from "../../src/upstream/shared-handles.js";
import { UpstreamTable } from "../../src/upstream/upstreams.js";
import { eventually } from "../support/eventually.js";
import { needOwnServerBinaries } from "../support/own-servers.js";
import { type SilenceableRedis, startSilenceableRedis } from "../support/silent-redis.js";

// docs/deployment.md, "Redis silent": when the path to Redis goes silent (no FIN, no RST:
// test/support/tcp-forwarder.ts), each shared connection's first command that times out is followed by a
// PING with its own 1 s timeout, and one unanswered drops the connection and makes it anew
// (limits/redis-options.ts reconnectWhenSilent). The rate limits' drop was logged; the shared heads',
// answers' and filters' drops were not: when only they went silent, nothing in the log or the metrics told
// an operator that the proxy had remade them, or why.

const binaries = needOwnServerBinaries("redis");

/** An algo group of a gateway that is not started: what a deployment's shares would be given. */
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

const entry = {
  before: Buffer.from(`{"jsonrpc":"2.0","id":`),
  after: Buffer.from(`,"result":"0x1"}`),
  tier: "full" as const,
};

describe.skipIf(binaries.skip)("a shared connection dropped as silent is logged", () => {
  let silent: SilenceableRedis;
  let heads: SharedHeads | undefined;
  let answers: SharedAnswers | undefined;
  let handles: SharedHandles | undefined;
  const lines: string[] = [];

  beforeAll(async () => {
    silent = await startSilenceableRedis();
  }, 30_000);
  afterAll(async () => {
    await heads?.close();
    answers?.close();
    handles?.close();
    await silent?.close();
  });

  it("names the heads', the answers' and the filters' connections, and the PING", async () => {
    const config = { redis: silent.url, leaseMs: 100, fallbackShare: 1 };
    const logger = createLogger("info", (line) => lines.push(line));
    const prefix = `silent-logged-${process.pid}-${Date.now()}:`;
    heads = new SharedHeads(config, logger);
    answers = new SharedAnswers(config, prefix, logger);
    handles = new SharedHandles(config, logger);
    const group = groupOf("behind-the-hole");
    heads.attach([group]);
    handles.attach([group]);
    expect(await handles.ready(10_000)).toBe(true);
    await eventually(
      async () =>
        answers?.up === true && Number((await silent.admin.pubsub("NUMSUB", "gateway:heads:0"))[1]) === 1,
      10_000,
      "all connected",
    );

    silent.forwarder.blackHole();
    const share = group.states.share as HandleShare;
    const owner = `owner-${process.pid}`;
    let height = 50_000_000;
    const logged = () => lines.map((line) => JSON.parse(line) as Record<string, string>);
    const connections = () =>
      new Set(
        logged()
          .filter((line) => line.msg === "shared Redis connection went silent, made anew")
          .map((line) => line.connection),
      );
    // each connection's commands time out in the dark (the subscriber PINGs by itself every 2 s)
    await eventually(
      async () => {
        height += 1;
        group.served.raise(height);
        answers?.put("algo", "k", entry);
        await answers?.get("algo", "k");
        await share.recall(owner, ["0x1"]).catch(() => []);
        return connections().size === 4;
      },
      20_000,
      "every silent connection's drop logged",
    );
    expect([...connections()].sort()).toEqual([
      "shared answers",
      "shared filters",
      "shared heads",
      "shared heads' subscriber",
    ]);
    for (const line of logged().filter((one) => one.connection !== undefined)) {
      expect(line.level).toBe("warn");
      expect(line.reason).toMatch(/PING got no answer within 1000 ms/);
      // no URL, and so no password of one
      expect(JSON.stringify(line)).not.toMatch(/redis:\/\/|127\.0\.0\.1/);
    }
  }, 60_000);
});
