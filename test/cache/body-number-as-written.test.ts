import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { callsWaiting } from "../../src/cache/relay-cached.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// java-tron reads POST /wallet/getblockbynum's body into a NumberMessage with its protobuf JsonFormat
// (framework/src/main/java/org/tron/core/services/http/GetBlockByNumServlet.java doPost, JsonFormat.merge).
// Its tokenizer takes `5.0` as one token, and an int64 field's value goes through parseInteger, which is
// Long.parseLong for a short one: "5.0" throws NumberFormatException, turned into the tokenizer's
// ParseException "<line>:<column>: Couldn't parse integer: For input string: \"5.0\"" (JsonFormat.java
// Tokenizer.consumeInt64, integerParseException), and Util.processError answers it with a 200 as
// {"Error": e.getClass() + " : " + e.getMessage()} (Util.printErrorMsg). The body reads here as {"num": 5}:
// the two are two calls, and neither may be answered with the other's answer.

const HEIGHT = 5_000;
const FINAL = 4_000;

/** java-tron's answer to a `num` written with a fraction or an exponent, else undefined. */
function refusal(body: string): { status: number; body: unknown } | undefined {
  const match = /"num"\s*:\s*(-?\d+[.eE][0-9eE.+-]*)/.exec(body);
  if (match === null) return undefined;
  // the tokenizer's column (one-based) of the number's token, on the body's first line
  const column = body.indexOf(match[1] as string) + 1;
  return {
    status: 200,
    body: {
      Error: `class org.tron.core.services.http.JsonFormat$ParseException : 1:${column}: Couldn't parse integer: For input string: "${match[1]}"`,
    },
  };
}

describe("a TRON body's number written otherwise than its value reads", () => {
  let trx: Endpoint;
  let node: LoopbackNode;
  let gw: RunningGateway;
  let hold: Promise<void> | undefined;

  beforeAll(async () => {
    trx = endpointsByLabel.get("trx") as Endpoint;
    const serve = softwareNode(trx, nodeState(trx, HEIGHT));
    node = await startLoopbackNode(async (request) => {
      const refused = refusal(request.body);
      if (refused !== undefined) {
        if (hold !== undefined) await hold;
        return refused;
      }
      return serve(request);
    });
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

  const cache = () => gw.gateway.upstreams.group("trx", "/")?.cache;
  const post = async (body: string) => {
    const answer = await gw.call("trx", `/${KEYS.all}/wallet/getblockbynum`, { body });
    return { json: answer.json as Record<string, unknown>, cache: answer.headers["x-cache"] };
  };
  const reached = (body: string) => node.requests.filter((r) => r.body === body).length;

  it("a plain num asked while the other is in flight gets its block, not the other's refusal", async () => {
    let release = () => {};
    hold = new Promise((resolve) => {
      release = resolve;
    });
    const odd = post(`{"num":${FINAL}.0}`);
    await eventually(() => reached(`{"num":${FINAL}.0}`) === 1, 4_000, "the num with a fraction at the node");
    const plain = post(`{"num":${FINAL}}`);
    await eventually(
      () =>
        reached(`{"num":${FINAL}}`) === 1 ||
        callsWaiting(cache() as NonNullable<ReturnType<typeof cache>>) > 0,
      4_000,
      "the plain call waiting or at the node",
    );
    release();
    hold = undefined;
    const [oddAnswer, plainAnswer] = await Promise.all([odd, plain]);
    expect(oddAnswer.json.Error).toContain("Couldn't parse integer");
    expect(plainAnswer.json, JSON.stringify(plainAnswer.json)).toMatchObject({
      block_header: { raw_data: { number: FINAL } },
    });
  });

  it("nor is the other answered from the cache with the plain num's block", async () => {
    // the plain num's block is solidified and kept: the same call again is a hit
    expect((await post(`{"num":${FINAL + 1}}`)).cache).toBe("miss");
    expect((await post(`{"num":${FINAL + 1}}`)).cache).toBe("hit");
    for (const body of [`{"num":${FINAL + 1}.0}`, `{"num":${(FINAL + 1) / 1000}e3}`]) {
      const odd = await post(body);
      expect(odd.json.Error, JSON.stringify(odd.json)).toContain("Couldn't parse integer");
      expect(reached(body)).toBe(1);
    }
  });
});
