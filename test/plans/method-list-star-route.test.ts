// docs/plans.md: "A key's method list names the call of clauses as `POST /accounts/*`, apart from the single
// call's `POST /accounts/{}`". A list of that one entry allows the batch call alone: its `*` was read as a
// wildcard, which allowed the single call (`POST /accounts/{address}`) and `POST /accounts/{address}/{path...}`
// too, which the owner never listed. A route whose shape holds a `*` of its own, named whole, is literal.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { StaticKey } from "../../src/config/types.js";
import { checkedSettings } from "../../src/keys/key-settings.js";
import type { Endpoint } from "../../src/registry/types.js";
import { type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

const STRANGER = "0x1111111111111111111111111111111111111111";
const KEY = "FNbatchCallOnly000000000000000";
const SETTINGS = { methods: ["POST /accounts/*"] };
const KEYS: StaticKey[] = [
  { key: KEY, networks: "*", rate: { perSecond: 1000, burst: 1000 }, settings: SETTINGS },
];
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

describe("a VeChain key whose method list names the batch call `POST /accounts/*`", () => {
  let vechain: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    vechain = await startLoopbackNode(softwareNode(endpoint("vet"), nodeState(endpoint("vet"), 1_000_000)));
    gw = await startGateway({ upstreams: { vet: [vechain.url] }, keys: [...TEST_KEYS, ...KEYS] });
    await everyNodeInRotation(gw, "vet", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await vechain?.close();
  });

  const reaches = async (path: string, body: unknown) => {
    const before = vechain.requests.length;
    const answer = await gw.call("vet", `/${KEY}${path}`, { body: JSON.stringify(body) });
    const reached = vechain.requests.slice(before).some((r) => r.url.startsWith(path));
    return { status: answer.status, text: answer.text, reached };
  };

  it("the owner can save that list (the documented name of the batch call)", () => {
    expect(() => checkedSettings(SETTINGS)).not.toThrow();
  });

  it("control: the batch call passes", async () => {
    const r = await reaches("/accounts/*", { clauses: [{ to: STRANGER, value: "0x0", data: "0x" }] });
    expect(r.reached).toBe(true);
  });

  it("the single call `POST /accounts/{address}` is refused (not on the list)", async () => {
    const r = await reaches(`/accounts/${STRANGER}`, { value: "0x0", data: "0x" });
    expect(r.reached).toBe(false);
    expect(r.status).toBe(403);
  });
});
