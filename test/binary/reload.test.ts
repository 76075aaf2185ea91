import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BinaryFolder,
  binaryInEmptyFolder,
  type RunningBinary,
  startBinary,
  stopBinary,
  writeDeployment,
} from "../support/binary.js";
import { eventually } from "../support/eventually.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// SIGHUP under a steady stream of calls: the label moves to its new upstream without one failed call, and
// a broken file changes nothing.

const KEY = "FNreload0000000000000000000000001";

/** The processes whose parent is `pid` (the primary's workers), from /proc. */
function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        // the parent is the field after the command, which is in parentheses and may hold spaces
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe.each([1, 2])("SIGHUP reloads the deployment config (%i worker process(es))", (workers) => {
  let folder: BinaryFolder;
  let a: LoopbackNode;
  let b: LoopbackNode;
  let gateway: RunningBinary;
  let config = "";
  const agent = new Agent({ connections: 8 });
  const write = (upstream: string, extra?: string) =>
    writeDeployment(config, upstream, KEY, [`workers: ${workers}`, ...(extra === undefined ? [] : [extra])]);

  beforeAll(async () => {
    folder = await binaryInEmptyFolder();
    config = join(folder.dir, "deployment.yaml");
    a = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0xa" }));
    b = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0xb" }));
    write(a.url);
    // as the README runs it, by a relative path: its workers must not take that path for an argument
    gateway = await startBinary(folder, ["--config", config], {}, "./node-gateway");
  }, 120_000);
  afterAll(async () => {
    await stopBinary(gateway);
    await Promise.all([a?.close(), b?.close(), agent.close()]);
    folder?.remove();
  });

  it("moves eth to a new upstream without one failed call, and a broken file changes nothing", async () => {
    const calls: { started: number; ended: number; status: number; result: string }[] = [];
    let streaming = true;
    const call = async () => {
      const started = performance.now();
      const answer = await request(`http://127.0.0.1:${gateway.port}/${KEY}/`, {
        method: "POST",
        dispatcher: agent,
        headers: { host: "eth.gw.test", "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
      }).catch(() => undefined);
      const body = answer === undefined ? {} : ((await answer.body.json()) as { result?: string });
      calls.push({
        started,
        ended: performance.now(),
        status: answer?.statusCode ?? 0,
        result: body.result ?? "",
      });
    };
    // eight callers, each calling again as soon as it has its answer
    const stream = Promise.all(
      Array.from({ length: 8 }, async () => {
        while (streaming) await call();
      }),
    );
    /** Waits until `count` calls begun after `since` have been answered. */
    const answered = (count: number, since: number, what: string) =>
      eventually(() => calls.filter((c) => c.started > since).length >= count, 5_000, what);
    await answered(40, 0, "forty calls answered before the reload");
    write(b.url);
    const reloaded = performance.now();
    gateway.child.kill("SIGHUP");
    await eventually(
      () => gateway.logs.some((l) => l.includes('"msg":"config reloaded"')),
      3_000,
      "reloaded",
    );
    // the reload is done once its process says so (with workers, the primary, which has sent it on): calls
    // begun 50 ms after that (the workers' share of the trip) are the new config's, however loaded the machine
    const applied = Math.max(performance.now(), reloaded + 50);
    await answered(60, applied + 50, "sixty calls begun after the reload answered");
    const refused = performance.now();
    write(b.url, "limits: { maxBatch: many }");
    gateway.child.kill("SIGHUP");
    await eventually(
      () => gateway.logs.some((l) => l.includes("config reload refused")),
      3_000,
      "the broken file refused",
    );
    await answered(40, refused + 50, "forty calls begun after the refused reload answered");
    streaming = false;
    await stream;

    expect(calls.length).toBeGreaterThan(100);
    expect(calls.filter((c) => c.status !== 200)).toEqual([]);
    // every call begun after the reload (and its signal's trip) was served by the new upstream
    const after = calls.filter((c) => c.started > applied + 50);
    expect(after.length).toBeGreaterThan(50);
    expect(after.filter((c) => c.result !== "0xb")).toEqual([]);
    // and the old one served every call answered before it
    const before = calls.filter((c) => c.ended < reloaded);
    expect(before.length).toBeGreaterThan(20);
    expect(before.filter((c) => c.result !== "0xa")).toEqual([]);
    const refusal = gateway.logs.find((l) => l.includes("config reload refused")) ?? "";
    expect(refusal).toContain("maxBatch must be integer");
    expect(refusal).toMatch(/deployment\.yaml:9:/);
    expect(gateway.child.exitCode).toBe(null);
  }, 30_000);

  /** One eth_blockNumber through the running binary: its status. */
  const blockNumberStatus = async () => {
    const answer = await request(`http://127.0.0.1:${gateway.port}/${KEY}/`, {
      method: "POST",
      dispatcher: agent,
      headers: { host: "eth.gw.test", "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    });
    await answer.body.dump();
    return answer.statusCode;
  };

  it("names a changed setting that takes a restart, and the next stop waits the reloaded shutdownDelayMs", async () => {
    const reloads = () => gateway.logs.filter((l) => l.includes('"msg":"config reloaded"')).length;
    const before = reloads();
    write(b.url, "limits: { shutdownDelayMs: 3000, keepAliveTimeoutMs: 1234 }");
    gateway.child.kill("SIGHUP");
    await eventually(() => reloads() > before, 3_000, "reloaded");
    const restartOnly = () => gateway.logs.filter((l) => l.includes("which take a restart"));
    await eventually(() => restartOnly().length === 1, 3_000, "the warning");
    expect(restartOnly()[0]).toContain('"settings":"limits.keepAliveTimeoutMs"');
    // still not applied at the next reload, so still named; taken back, nothing is
    const reloadAgain = async () => {
      const count = reloads();
      gateway.child.kill("SIGHUP");
      await eventually(() => reloads() > count, 3_000, "reloaded again");
    };
    await reloadAgain();
    await eventually(() => restartOnly().length === 2, 3_000, "the warning again");
    write(b.url, "limits: { shutdownDelayMs: 3000 }");
    await reloadAgain();
    expect(restartOnly()).toHaveLength(2);
    if (workers > 1) {
      // a SIGHUP that reaches a worker (a signal to the process group) is the primary's to act on
      const workerPids = childrenOf(gateway.child.pid as number);
      expect(workerPids.length).toBe(workers);
      for (const pid of workerPids) process.kill(pid, "SIGHUP");
      expect(await blockNumberStatus()).toBe(200);
      expect(gateway.logs.filter((l) => l.includes("worker exited"))).toEqual([]);
    }
    // a stop now waits 3 s, serving, before the listener closes (it began at once with the first config's 0)
    const stopping = performance.now();
    gateway.child.kill("SIGTERM");
    await eventually(
      () => gateway.logs.some((l) => l.includes('"msg":"shutting down"')),
      2_500,
      "the stop begun",
    );
    expect(await blockNumberStatus()).toBe(200);
    await gateway.exited;
    expect(performance.now() - stopping).toBeGreaterThanOrEqual(3_000);
  }, 30_000);
});
