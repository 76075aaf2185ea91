import type { Agent as HttpAgent } from "node:http";
import { FetchRequest, JsonRpcProvider, Network } from "ethers";
import type { Agent } from "undici";
import { createPublicClient, http, numberToHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Upstream } from "../../src/upstream/upstreams.js";
import { sdkUrl, testHostDispatcher, testHostHttpAgent } from "../sdk/resolve.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, startGateway } from "../support/gateway.js";

// A real EVM label failing over, as real SDKs see it. Three anvil nodes behind `eth` mine a block a second;
// viem and ethers clients call through the gateway the whole time while one node is killed by its PID,
// another stops mining and falls behind, and the killed one is restarted on its port. No SDK call may fail.
//
// Which node served a call is read from the answer itself: each node gives one address (MARKER) a balance
// of its own, so a getBalance of it names the node. The steps run in order, on one gateway and one traffic.

const PROBE_MS = 250;
const MAX_LAG_BLOCKS = 2;
const RECOVER_AFTER = 2;
const ETH_HEALTH = {
  probeIntervalMs: PROBE_MS,
  probeTimeoutMs: 500,
  recoverAfter: RECOVER_AFTER,
  maxLagBlocks: MAX_LAG_BLOCKS,
  maxLagSeconds: 0,
};
/** Two probe intervals at their longest (+20% jitter), and room for a busy machine. */
const TWO_PROBES_MS = 2 * PROBE_MS * 1.2 + 100;
/** Each traffic worker's pause between two rounds of calls: steady traffic that leaves the probes room. */
const PACE_MS = 20;

// the nodes are started as the chain eth is (registry chainId 1): the prober serves no other
const CHAIN_ID = 1n;
/** An anvil dev account: funded at genesis on every node, and no call here moves it. */
const DEV_ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const GENESIS_BALANCE = 10_000n * 10n ** 18n;
const MARKER = "0x00000000000000000000000000000000000a11ce";
/** MARKER's balance on each node, and the gateway's name for the node; the restarted `c` is a new process. */
const MARKS = new Map<bigint, { node: string; upstream: string }>([
  [1001n, { node: "a", upstream: "a" }],
  [1002n, { node: "b", upstream: "b" }],
  [1003n, { node: "c", upstream: "c" }],
  [1004n, { node: "c restarted", upstream: "c" }],
]);
const markOf = (node: string): bigint => [...MARKS].find(([, mark]) => mark.node === node)?.[0] as bigint;

type Call = "blockNumber" | "chainId" | "balance" | "marker";
type Calls = Record<Call, () => Promise<bigint | number | string>>;

/** One SDK call: when it was sent and answered, what it got, and which upstreams were out of rotation. */
interface Answer {
  readonly worker: string;
  readonly call: Call;
  readonly sentAt: number;
  readonly doneAt: number;
  readonly value: bigint | undefined;
  readonly error: string | undefined;
  readonly outAtSend: readonly string[];
  readonly outAtDone: readonly string[];
}

const servedBy = (answer: Answer) =>
  answer.call === "marker" && answer.value !== undefined ? MARKS.get(answer.value) : undefined;

/** Calls that threw, or were answered with something no node has. */
function failures(answers: readonly Answer[]): string[] {
  return answers.flatMap((answer) => {
    const { worker, call, value, error } = answer;
    if (error !== undefined) return [`${worker} ${call}: ${error}`];
    const wrong =
      (call === "chainId" && value !== CHAIN_ID) ||
      (call === "balance" && value !== GENESIS_BALANCE) ||
      (call === "marker" && servedBy(answer) === undefined);
    return wrong ? [`${worker} ${call}: ${String(value)}`] : [];
  });
}

/** Block numbers read after a higher one had already been read. */
function wentBackwards(heads: readonly Answer[]): Answer[] {
  return heads.filter((later) =>
    heads.some((earlier) => earlier.doneAt < later.sentAt && (earlier.value ?? 0n) > (later.value ?? 0n)),
  );
}

describe("eth on three real anvil nodes, through viem and ethers", () => {
  const anvils: Anvil[] = [];
  let a: Anvil;
  let b: Anvil;
  let c: Anvil;
  let gw: RunningGateway;
  let dispatcher: Agent;
  let agent: HttpAgent;
  const providers: JsonRpcProvider[] = [];
  const answers: Answer[] = [];
  let driving = false;
  let workers: Promise<void>[] = [];

  const members = (): readonly Upstream[] => gw.gateway.upstreams.group("eth", "/")?.members ?? [];
  const member = (name: string) => members().find((m) => m.name === name) as Upstream;
  const state = (name: string) => member(name).health.state;
  const outOfRotation = () => members().flatMap((m) => (m.health.inRotation ? [] : [m.name]));
  const since = (t: number, call?: Call) =>
    answers.filter((answer) => answer.sentAt >= t && (call === undefined || answer.call === call));
  const servedSince = (t: number, node: string, sdk: string) =>
    since(t, "marker").filter((answer) => servedBy(answer)?.node === node && answer.worker.startsWith(sdk));
  const head = async (node: Anvil) => BigInt(await node.rpc<string>("eth_blockNumber"));
  const stateChanges = (upstream: string) =>
    gw.logs
      .filter((line) => line.includes('"msg":"upstream state"'))
      .map((line) => JSON.parse(line) as { upstream: string; from: string; to: string; reason: string })
      .filter((change) => change.upstream === upstream);

  function viemCalls(): Calls {
    const client = createPublicClient({
      transport: http(sdkUrl(gw, "eth"), {
        batch: false,
        retryCount: 0,
        // Node's RequestInit types `dispatcher` with its bundled undici-types (test/sdk/evm.test.ts)
        fetchOptions: { dispatcher } as unknown as RequestInit,
      }),
    });
    return {
      blockNumber: () => client.getBlockNumber({ cacheTime: 0 }),
      chainId: () => client.getChainId(),
      balance: () => client.getBalance({ address: DEV_ADDRESS }),
      marker: () => client.getBalance({ address: MARKER }),
    };
  }

  function ethersCalls(): Calls {
    const request = new FetchRequest(sdkUrl(gw, "eth"));
    request.getUrlFunc = FetchRequest.createGetUrlFunc({ agent });
    // cacheTimeout -1: every call reaches the gateway, none is answered from the provider's cache
    const provider = new JsonRpcProvider(request, Number(CHAIN_ID), {
      staticNetwork: Network.from(Number(CHAIN_ID)),
      cacheTimeout: -1,
    });
    providers.push(provider);
    return {
      blockNumber: () => provider.getBlockNumber(),
      chainId: () => provider.send("eth_chainId", []),
      balance: () => provider.getBalance(DEV_ADDRESS),
      marker: () => provider.getBalance(MARKER),
    };
  }

  /** One client calling through the gateway, one call after another, until the traffic stops. */
  async function drive(worker: string, calls: Calls): Promise<void> {
    while (driving) {
      for (const call of Object.keys(calls) as Call[]) {
        const outAtSend = outOfRotation();
        const sentAt = performance.now();
        let value: bigint | undefined;
        let error: string | undefined;
        try {
          value = BigInt(await calls[call]());
        } catch (e) {
          error = e instanceof Error ? e.message : String(e);
        }
        answers.push({
          worker,
          call,
          sentAt,
          doneAt: performance.now(),
          value,
          error,
          outAtSend,
          outAtDone: outOfRotation(),
        });
      }
      await new Promise((resolve) => setTimeout(resolve, PACE_MS));
    }
  }

  async function stopTraffic(): Promise<void> {
    driving = false;
    await Promise.all(workers);
    workers = [];
  }

  beforeAll(async () => {
    const started = await Promise.allSettled([1, 2, 3].map(() => startAnvil({ blockTime: 1, chainId: 1 })));
    for (const result of started) if (result.status === "fulfilled") anvils.push(result.value);
    const [first, second, third] = started.map((result) => {
      if (result.status === "rejected") throw result.reason;
      return result.value;
    });
    [a, b, c] = [first, second, third] as [Anvil, Anvil, Anvil];
    for (const [node, name] of [
      [a, "a"],
      [b, "b"],
      [c, "c"],
    ] as const)
      await node.rpc("anvil_setBalance", [MARKER, numberToHex(markOf(name))]);
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: a.url, name: "a" },
          { url: b.url, name: "b" },
          { url: c.url, name: "c" },
        ],
      },
      // probes for eth only, quick, and a lag judged in blocks alone
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 0, labels: { eth: ETH_HEALTH } },
    });
    dispatcher = testHostDispatcher();
    agent = testHostHttpAgent();
    driving = true;
    workers = [
      drive("viem#1", viemCalls()),
      drive("viem#2", viemCalls()),
      drive("ethers#1", ethersCalls()),
      drive("ethers#2", ethersCalls()),
    ];
  });

  afterAll(async () => {
    await stopTraffic();
    for (const provider of providers) provider.destroy();
    agent?.destroy();
    await dispatcher?.close();
    await gw?.close();
    // every anvil this file started, by its own PID, whatever the tests did
    await Promise.all(anvils.map((node) => node.stop()));
  });

  it("a node killed with SIGKILL mid-traffic fails no call and is failing at once", async () => {
    const from = performance.now();
    await eventually(
      () => ["a", "b", "c"].every((node) => servedSince(0, node, "").length >= 3),
      5000,
      "traffic reaching every node",
    );
    expect(members().map((m) => m.health.state)).toEqual(["healthy", "healthy", "healthy"]);
    // killed as it is being called: the gateway had a call on it a moment before
    await eventually(() => member("c").health.inFlight > 0, 5000, "a call in flight on c");
    const killedAt = performance.now();
    await c.kill("SIGKILL");
    await eventually(() => state("c") === "failing", TWO_PROBES_MS, "c out of rotation");
    expect(stateChanges("c")).toEqual([
      expect.objectContaining({ from: "checking", to: "healthy" }),
      expect.objectContaining({ from: "healthy", to: "failing" }),
    ]);
    // traffic goes on over the two nodes left
    await eventually(
      () =>
        servedSince(killedAt, "a", "viem").length >= 5 && servedSince(killedAt, "b", "ethers").length >= 5,
      5000,
      "reads after the kill",
    );
    // some calls were on their way when c died, and were answered like the rest
    expect(answers.filter((answer) => answer.sentAt < killedAt && answer.doneAt > killedAt)).not.toEqual([]);
    expect(failures(since(from))).toEqual([]);
  });

  it("a node that stops mining is lagging within two probe intervals of falling behind, and serves nothing after", async () => {
    expect(state("b")).toBe("healthy");
    // b stops mining from now on, as `--no-mining` would have it, while a keeps mining every second
    await b.rpc("evm_setIntervalMining", [0]);
    const frozen = await head(b);
    // b's lag passes the threshold when a's head is more than MAX_LAG_BLOCKS past b's, seen on a itself
    let passedAt: number | undefined;
    let laggingAt: number | undefined;
    const polling = performance.now();
    while (passedAt === undefined || laggingAt === undefined) {
      if (performance.now() - polling > 10_000) throw new Error("b was not lagging within 10 s");
      // the state is read before a's head: lagging while a is within the threshold would be too soon
      const lagging = state("b") === "lagging";
      const ahead = (await head(a)) - frozen;
      if (lagging && laggingAt === undefined) {
        laggingAt = performance.now();
        expect(ahead, "b lagging while within the threshold").toBeGreaterThan(MAX_LAG_BLOCKS);
      }
      if (ahead > MAX_LAG_BLOCKS && passedAt === undefined) passedAt = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(laggingAt - passedAt).toBeLessThan(TWO_PROBES_MS);
    expect(member("b").health.report()).toMatchObject({ state: "lagging", head: Number(frozen) });

    // a mines two more blocks while every call goes on; b serves none of them
    const aheadBy = Number((await head(a)) - frozen);
    await eventually(
      () => (member("a").health.head ?? 0) >= Number(frozen) + aheadBy + 2,
      5000,
      "two more blocks on a, seen by the gateway",
    );
    // the traffic goes on: on a loaded machine its SDK workers may have made only a few calls by now
    await eventually(
      () =>
        servedSince(laggingAt, "a", "viem").length > 5 && servedSince(laggingAt, "a", "ethers").length > 5,
      5000,
      "calls of each SDK served by a since b lagged",
    );
    const after = since(laggingAt);
    expect(failures(after)).toEqual([]);
    expect(after.filter((answer) => servedBy(answer)?.node === "b")).toEqual([]);
    const heads = after.filter((answer) => answer.call === "blockNumber");
    // every block number is a's: past b's frozen head by more than the threshold, and never going back
    for (const answer of heads) expect(answer.value).toBeGreaterThan(frozen + BigInt(MAX_LAG_BLOCKS));
    expect(wentBackwards(heads)).toEqual([]);
    expect(new Set(heads.map((answer) => answer.value)).size).toBeGreaterThanOrEqual(2);
    // b stayed where it stopped, and a went on
    expect(await head(b)).toBe(frozen);
    expect(Number((await head(a)) - frozen)).toBeGreaterThan(aheadBy);
  });

  it("the killed node restarted on its port is healthy after recoverAfter good probes, and serves calls again", async () => {
    const restarted = await startAnvil({ blockTime: 1, port: c.port, chainId: 1 });
    anvils.push(restarted);
    await restarted.rpc("anvil_setBalance", [MARKER, numberToHex(markOf("c restarted"))]);
    // a new node starts at block 0; it syncs up to its sibling's head, as a real one would from its peers
    const gap = (await head(a)) - (await head(restarted));
    if (gap > 0n) await restarted.rpc("anvil_mine", [numberToHex(gap)]);
    const syncedAt = performance.now();
    const back = await eventually(() => state("c") === "healthy", 10 * PROBE_MS, "c back in rotation");
    // two good probes in a row after it caught up (one before would have found it behind): one interval apart
    expect(back).toBeGreaterThan(PROBE_MS * 0.8 - 50);
    expect(stateChanges("c").at(-1)).toMatchObject({
      to: "healthy",
      reason: `${RECOVER_AFTER} good probes in a row`,
    });
    const report = member("c").health.report();
    expect(report.state).toBe("healthy");
    expect(Math.abs((report.head ?? 0) - Number(await head(a)))).toBeLessThanOrEqual(MAX_LAG_BLOCKS);
    const healthyAt = syncedAt + back;
    await eventually(
      () =>
        servedSince(healthyAt, "c restarted", "viem").length >= 3 &&
        servedSince(healthyAt, "c restarted", "ethers").length >= 3,
      5000,
      "calls answered by the restarted c",
    );
    expect(failures(since(healthyAt))).toEqual([]);
  });

  it("viem and ethers saw no failed call through all of it, and no node out of rotation served one", async () => {
    // enough traffic from each to mean something: on a loaded machine the faults above pass sooner than
    // that many calls, so the traffic runs on until it has them
    const callsOf = (sdk: string) => answers.filter((answer) => answer.worker.startsWith(sdk)).length;
    await eventually(
      () => callsOf("viem") > 200 && callsOf("ethers") > 200,
      20_000,
      "200 calls from each SDK",
    );
    await stopTraffic();
    expect(failures(answers)).toEqual([]);
    // served by a node that was out of rotation both when the call was sent and when it was answered
    const outOfRotationServed = answers.filter((answer) => {
      const upstream = servedBy(answer)?.upstream;
      return (
        upstream !== undefined && answer.outAtSend.includes(upstream) && answer.outAtDone.includes(upstream)
      );
    });
    expect(outOfRotationServed).toEqual([]);
  }, 30_000);
});
