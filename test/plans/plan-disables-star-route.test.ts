// A plan's disabledMethods names REST routes by their shape (docs/plans.md), VeChain's call of clauses as
// `POST /accounts/*`. Its `*` was read as a wildcard: a plan that disabled the call of clauses disabled
// the single call `POST /accounts/{address}` (and `POST /accounts/{address}/…`) with it, so an operator could
// not sell a plan without the one and with the other. A route whose shape holds a `*` of its own, named
// whole, is that route alone, as in a key's method list (test/plans/method-list-star-route.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { PLAN_FIELDS } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { type RunningGateway, startGateway, TEST_PLANS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

const STRANGER = "0x1111111111111111111111111111111111111111";
const KEY = "FNnoBatchCallPlan0000000000000";
const vet = endpointsByLabel.get("vet") as Endpoint;

describe("a plan that disables VeChain's call of clauses `POST /accounts/*`", () => {
  let vechain: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    vechain = await startLoopbackNode(softwareNode(vet, nodeState(vet, 1_000_000)));
    gw = await startGateway({
      upstreams: { vet: [vechain.url] },
      plans: {
        ...TEST_PLANS,
        "no-batch": {
          ...PLAN_FIELDS,
          computeUnitRate: { perSecond: 1e6, burst: 1e6 },
          disabledMethods: ["POST /accounts/*"],
        },
      },
      keys: [{ key: KEY, networks: "*", plan: "no-batch", rate: { perSecond: 1000, burst: 1000 } }],
    });
    await everyNodeInRotation(gw, "vet", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await vechain?.close();
  });

  const send = async (path: string, body: unknown) => {
    const before = vechain.requests.length;
    const answer = await gw.call("vet", `/${KEY}${path}`, { body: JSON.stringify(body) });
    const code = (answer.json as { error?: { code?: string } } | undefined)?.error?.code;
    return { status: answer.status, code, reached: vechain.requests.length > before };
  };

  it("refuses the call of clauses", async () => {
    const r = await send("/accounts/*", { clauses: [{ to: STRANGER, value: "0x0", data: "0x" }] });
    expect(r).toMatchObject({ status: 403, code: "METHOD_NOT_ON_PLAN", reached: false });
  });

  it("serves the single call `POST /accounts/{address}`", async () => {
    const r = await send(`/accounts/${STRANGER}`, { value: "0x0", data: "0x" });
    expect(r.code).not.toBe("METHOD_NOT_ON_PLAN");
    expect(r.reached).toBe(true);
  });
});
