import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// TRON's own docs write their HTTP API calls as `curl -X POST …/wallet/getblockbynum -d '{"num": 5}'`, and
// curl's `-d` names the body application/x-www-form-urlencoded: java-tron reads it all the same (its
// servlets read the request's reader, PostParams.getPostParams). The gateway refused such a call 415. A
// form-typed body that is JSON goes to the node as JSON; a form that is a form is still refused.
describe("a REST body sent as curl's -d sends it", () => {
  const endpoint = endpointsByLabel.get("trx");
  if (endpoint === undefined) throw new Error("no trx label");
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    node = await startLoopbackNode(softwareNode(endpoint, () => nodeState(endpoint, 5_000), [""]));
    gw = await startGateway({
      upstreams: { trx: Object.fromEntries(endpoint.mounts.map((m) => [m.path, [node.url]])) },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "trx", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const post = (body: string) =>
    gw.call("trx", `/${KEYS.all}/wallet/getblockbynum`, {
      body,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });

  it("a JSON body reaches the node as JSON, and its answer the caller", async () => {
    const answer = await post('{"num": 5}');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json).toMatchObject({ block_header: { raw_data: { number: 5 } } });
    const seen = node.requests.filter((r) => r.url.startsWith("/wallet/getblockbynum")).at(-1);
    expect(seen?.headers["content-type"]).toBe("application/json");
    expect(seen?.body).toBe('{"num": 5}');
  });

  it("a form that is a form is refused 415, as before", async () => {
    const answer = await post("num=5");
    expect(answer.status).toBe(415);
    expect(answer.json).toMatchObject({ error: { code: "UNSUPPORTED_MEDIA_TYPE" } });
  });
});
