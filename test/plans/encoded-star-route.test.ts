// A key's method list names VeChain's call of clauses as `POST /accounts/*`, apart from the single call
// `POST /accounts/{}` (docs/plans.md). Thor routes on the decoded path
// (vechain/thor api/api.go: `mux.NewRouter()` without UseEncodedPath; api/accounts/accounts.go mounts
// `/*` for handleCallBatchCode before `/{address}`), so `POST /accounts/%2A` is its call of clauses, while
// the gateway read it as the single call at an address `%2A`: a key whose list allows only the single call
// had the call of clauses served by writing its `*` encoded.
// An encoded asterisk is refused as the other encoded path syntax is (BAD_PATH), before any node sees it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { StaticKey } from "../../src/config/types.js";
import type { Endpoint } from "../../src/registry/types.js";
import { type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

const STRANGER = "0x1111111111111111111111111111111111111111";
const SINGLE = "FNsingleCallOnly00000000000000";
const KEYS: StaticKey[] = [
  {
    key: SINGLE,
    networks: "*",
    rate: { perSecond: 1000, burst: 1000 },
    settings: { methods: ["POST /accounts/{}"] },
  },
];
const vet = endpointsByLabel.get("vet") as Endpoint;

describe("VeChain's call of clauses with its `*` percent-encoded", () => {
  let vechain: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    vechain = await startLoopbackNode(softwareNode(vet, nodeState(vet, 1_000_000)));
    gw = await startGateway({
      upstreams: { vet: [vechain.url] },
      keys: [...TEST_KEYS, ...KEYS],
    });
    await everyNodeInRotation(gw, "vet", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await vechain?.close();
  });

  const clauses = { clauses: [{ to: STRANGER, value: "0x0", data: "0x" }] };
  const send = async (key: string, star: string) => {
    const before = vechain.requests.length;
    const answer = await gw.call("vet", `/${key}/accounts/${star}`, { body: JSON.stringify(clauses) });
    return { status: answer.status, reached: vechain.requests.length > before };
  };

  it("control: written plainly, it is refused as the key's list says", async () => {
    expect(await send(SINGLE, "*")).toEqual({ status: 403, reached: false });
  });

  it("encoded, it reaches no node on a key that lists the single call alone", async () => {
    for (const star of ["%2A", "%2a"])
      expect(await send(SINGLE, star)).toEqual({ status: 400, reached: false });
  });
});
