import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// A REST route that names a block in its path (registry `reads.paths`) goes only to a node that has that
// block: VeChain's GET /blocks/{revision}, behind two loopback Thor nodes one block apart. A Thor node
// answers a block it does not have with 200 and `null` (vechain/thor api/blocks), so a caller who asks for
// the block the node ahead just made must never get that null.

const vet = endpointsByLabel.get("vet") as Endpoint;
const trx = endpointsByLabel.get("trx") as Endpoint;
const H = 20_000_000;

describe("a REST read of a numbered block reaches a node that has it (loopback VeChain Thor)", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const block = (number: number) => ({
    number,
    id: `0x${number.toString(16).padStart(8, "0")}${"cd".repeat(28)}`,
    parentID: `0x${(number - 1).toString(16).padStart(8, "0")}${"cd".repeat(28)}`,
    timestamp: 1_700_000_000 + number * 10,
  });

  beforeAll(async () => {
    const answers = {
      [`GET /blocks/${H + 1}`]: {
        result: ({ height }: { height: number }) => (height >= H + 1 ? block(H + 1) : null),
      },
    };
    nodes = await Promise.all(
      [H + 1, H].map((height) =>
        startLoopbackNode(softwareNode(vet, nodeState(vet, height), [""], { answers })),
      ),
    );
    gw = await startGateway({
      upstreams: { vet: nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" })) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("20 reads of the block only the node ahead has: never null", async () => {
    for (let i = 0; i < 20; i++) {
      const r = await gw.call("vet", `/${KEYS.all}/blocks/${H + 1}`);
      expect(r.status).toBe(200);
      expect(r.json, `read ${i}`).toMatchObject({ number: H + 1 });
    }
  });
});

// And one that names it in its JSON body (registry `reads.bodies`): java-tron's POST /wallet/getblockbynum
// {"num": n}, which a node that does not have the block answers with 200 and {}.
describe("a REST read naming its block in its body reaches a node that has it (loopback java-tron)", () => {
  let nodes: LoopbackNode[];
  let gw: RunningGateway;
  const T = 70_000_000;

  beforeAll(async () => {
    nodes = await Promise.all(
      [T + 1, T].map((height) => startLoopbackNode(softwareNode(trx, nodeState(trx, height)))),
    );
    const list = nodes.map((node, i) => ({ url: node.url, name: i === 0 ? "ahead" : "behind" }));
    gw = await startGateway({
      upstreams: { trx: Object.fromEntries(trx.mounts.map((m) => [m.path, list])) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "trx");
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  it("10 reads of the block only the node ahead has, by its POST body: never {}", async () => {
    for (let i = 0; i < 10; i++) {
      const posted = await gw.call("trx", `/${KEYS.all}/wallet/getblockbynum`, { body: `{"num":${T + 1}}` });
      expect(posted.json, `POST ${i}`).toMatchObject({ block_header: { raw_data: { number: T + 1 } } });
    }
    expect(nodes[1]?.requests.filter((r) => r.body.includes(`${T + 1}`))).toEqual([]);
  });

  // TronWeb's getCurrentBlock GETs it: the same head call as the registry's POST with an empty body
  it("10 GETs of /wallet/getnowblock: the head call too, never below the head served", async () => {
    for (let i = 0; i < 10; i++) {
      const got = await gw.call("trx", `/${KEYS.all}/wallet/getnowblock`, { method: "GET" });
      expect(got.status, got.text).toBe(200);
      expect(got.json, `GET ${i}`).toMatchObject({ block_header: { raw_data: { number: T + 1 } } });
    }
  });
});
