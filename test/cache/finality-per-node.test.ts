import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import type { Upstream } from "../../src/upstream/upstreams.js";
import { tronBlock } from "../support/chain-answers.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type Responder, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// What a node that answered can say is final, on chains whose finality is a depth below the head: as deep
// below that node's own head as below the label's (a node behind, still in rotation, answers a block at
// the depth from its own head, which it may replace), and never an empty answer (java-tron's solidity API
// answers {} for a block its solidified view does not hold yet, two missed SR slots past the depth).

const JSON_TYPE = { "content-type": "application/json" };

describe("Octez: a level two below the label's head, answered by a node two levels behind", () => {
  const xtz = endpointsByLabel.get("xtz") as Endpoint;
  const H = 3_000_000;
  const a = nodeState(xtz, H);
  const b = nodeState(xtz, H - 2);
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  /** Octez's answer to GET /chains/main/blocks/<level>/hash: the block's hash as a JSON string. */
  const hashes =
    (hashOf: (level: number) => string): Responder =>
    (request) => {
      const level = /^\/chains\/main\/blocks\/(\d+)\/hash$/.exec(request.url)?.[1];
      return level === undefined ? undefined : { headers: JSON_TYPE, body: `"${hashOf(Number(level))}"\n` };
    };
  const hash = (round: string, level: number) =>
    `BL${round}${String(level).padStart(49 - round.length, "0")}`;

  beforeAll(async () => {
    nodes = await Promise.all([
      startLoopbackNode(
        firstOf(
          hashes((level) => hash("a", level)),
          softwareNode(xtz, () => a),
        ),
      ),
      // b's head block is one of another round, which the block a built on replaces
      startLoopbackNode(
        firstOf(
          hashes((level) => hash("b", level)),
          softwareNode(xtz, () => b),
        ),
      ),
    ]);
    gw = await startGateway({
      upstreams: { xtz: nodes.map((node, i) => ({ url: node.url, name: `n${i}` })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("is not kept for good", async () => {
    const group = gw.gateway.upstreams.group("xtz", "/");
    expect(group?.served.height).toBe(H);
    // only b serves: its own head is the level asked
    gw.gateway.cordon({ label: "xtz", upstream: "n0", cordoned: true });
    const read = () => gw.call("xtz", `/${KEYS.all}/chains/main/blocks/${H - 2}/hash`, { method: "GET" });
    const first = await read();
    expect(first.json).toBe(hash("b", H - 2));
    // the head moves: an answer kept for good would still be served
    gw.gateway.cordon({ label: "xtz", upstream: "n0", cordoned: false });
    group?.answeredHeight(group.members[0] as Upstream, H + 1, true);
    await eventually(() => group?.served.height === H + 1, 2_000, "the served head moved");
    expect((await read()).headers["x-cache"]).not.toBe("hit");
  });
});

describe("java-tron's solidity API: a block above its solidified one answers {}", () => {
  const trx = endpointsByLabel.get("trx") as Endpoint;
  const HEIGHT = 5_000;
  /** Two SR slots missed in the last round: solidified 20 below the head, one more than the depth. */
  const SOLIDIFIED_LAG = 20;
  const state = nodeState(trx, HEIGHT);
  let node: LoopbackNode;
  let gw: RunningGateway;
  const solidBlock = (num: number) => ({
    blockID: num.toString(16).padStart(64, "0"),
    block_header: { raw_data: { number: num, timestamp: 1_700_000_000_000 + num * 3000 } },
  });

  beforeAll(async () => {
    node = await startLoopbackNode(
      softwareNode(trx, () => state, [""], {
        answers: {
          "POST /walletsolidity/getblockbynum": {
            result: (s, body) => {
              const num = Number((body as { num?: number }).num);
              return num <= s.height - SOLIDIFIED_LAG ? solidBlock(num) : {};
            },
          },
        },
      }),
    );
    gw = await startGateway({
      upstreams: { trx: Object.fromEntries(trx.mounts.map((m) => [m.path, [node.url]])) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "trx", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  it("is never kept: once the node has solidified the block, the block is served", async () => {
    const read = async () => {
      const answer = await gw.call("trx", `/${KEYS.all}/walletsolidity/getblockbynum`, {
        body: JSON.stringify({ num: HEIGHT - 19 }),
      });
      return { json: answer.json, cache: answer.headers["x-cache"] };
    };
    expect((await read()).json).toEqual({});
    state.height += 5;
    const served = () => gw.gateway.upstreams.group("trx", "/")?.served.height ?? 0;
    await eventually(() => served() === HEIGHT + 5, 3_000, "the served head moved on");
    expect(await read()).toEqual({ cache: "miss", json: solidBlock(HEIGHT - 19) });
  });
});

describe("java-tron: what is final is each node's own solidified block, not a depth", () => {
  const trx = endpointsByLabel.get("trx") as Endpoint;
  const H = 8_000;
  // a: no SR missed its slot lately (solidified 19 below its head); b: some did (25 below)
  const lags = [19, 25];
  const states = lags.map(() => nodeState(trx, H));
  let nodes: LoopbackNode[];
  let gw: RunningGateway;

  beforeAll(async () => {
    nodes = await Promise.all(
      states.map((state, i) =>
        startLoopbackNode(
          softwareNode(trx, () => state, [""], {
            answers: {
              "POST /walletsolidity/getnowblock": {
                result: (s) => tronBlock(s.height - (lags[i] as number)),
              },
            },
          }),
        ),
      ),
    );
    gw = await startGateway({
      upstreams: {
        trx: Object.fromEntries(
          trx.mounts.map((m) => [m.path, nodes.map((node, i) => ({ url: node.url, name: `n${i}` }))]),
        ),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 60_000 },
    });
    await everyNodeInRotation(gw, "trx", 4_000);
    const group = gw.gateway.upstreams.group("trx", "/");
    // every node told the prober its solidified block
    await eventually(
      () =>
        group?.members.every((m, i) => group.finality.finalizedBy(m) === H - (lags[i] as number)) === true,
      4_000,
      "each node's solidified block learned",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  const read = async (num: number) => {
    const answer = await gw.call("trx", `/${KEYS.all}/wallet/getblockbynum`, {
      body: JSON.stringify({ num }),
    });
    return answer.headers["x-cache"];
  };
  /** Moves both nodes' heads on by one and waits until the label has served it. */
  const nextBlock = async () => {
    for (const state of states) state.height += 1;
    const target = states[0]?.height ?? 0;
    await eventually(
      () => gw.gateway.upstreams.group("trx", "/")?.served.height === target,
      4_000,
      "the served head moved on",
    );
  };

  it("a block a node has solidified is kept for good; one above, only while the head stays", async () => {
    gw.gateway.cordon({ label: "trx", upstream: "n1", cordoned: true });
    try {
      const solid = H - 19;
      const above = H - 18;
      expect(await read(solid)).toBe("miss");
      expect(await read(above)).toBe("miss");
      await nextBlock();
      expect(await read(solid)).toBe("hit");
      expect(await read(above)).toBe("miss");
    } finally {
      gw.gateway.cordon({ label: "trx", upstream: "n1", cordoned: false });
    }
  });

  it("a block 19 deep that the answering node has not solidified yet is not kept for good", async () => {
    gw.gateway.cordon({ label: "trx", upstream: "n0", cordoned: true });
    try {
      const head = states[1]?.height ?? 0;
      // 19 deep, and below what n0 has solidified, but above n1's solidified block (25 deep)
      const deep = head - 21;
      expect(await read(deep)).toBe("miss");
      await nextBlock();
      expect(await read(deep)).toBe("miss");
      const solid = head - 26;
      expect(await read(solid)).toBe("miss");
      await nextBlock();
      expect(await read(solid)).toBe("hit");
    } finally {
      gw.gateway.cordon({ label: "trx", upstream: "n0", cordoned: false });
    }
  });
});
