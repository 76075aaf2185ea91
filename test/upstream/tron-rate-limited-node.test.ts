import type { Agent as HttpAgent } from "node:http";
import { TronWeb } from "tronweb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { sdkUrl, testHostHttpAgent } from "../sdk/resolve.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, type SeenRequest, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// What a user saw: one of three java-tron nodes behind `trx` ran out of its HTTP rate limiter's permits, and
// a third of TronWeb's trx.getCurrentBlock() calls failed ("Cannot read properties of undefined (reading
// 'raw_data')") while two nodes could answer them. java-tron's RateLimiterServlet.service (tronprotocol/
// java-tron framework/src/main/java/org/tron/core/services/http/RateLimiterServlet.java) answers a call its
// limiter refuses without running the servlet, at HTTP 200 (no status set), content type
// "application/json; charset=utf-8", with println of Util.printErrorMsg(new IllegalAccessException("lack
// of computing resources")): {"Error":"class java.lang.IllegalAccessException : lack of computing
// resources"} and a newline. That is the node's 429, not an answer to the call: the read goes to another
// node, as a 429 does (docs/upstreams.md, "Retries").

const H = 69_000_000;
const REFUSAL = '{"Error":"class java.lang.IllegalAccessException : lack of computing resources"}\n';

interface AxiosLike {
  defaults: { httpAgent?: HttpAgent };
}

describe("tronweb: one of three java-tron nodes refuses calls for lack of computing resources", () => {
  const nodes: LoopbackNode[] = [];
  let refusing = false;
  /** Every node's limiter refusing, not only the first's. */
  let allRefusing = false;
  let gw: RunningGateway;
  let agent: HttpAgent;
  let tronWeb: TronWeb;

  beforeAll(async () => {
    const endpoint = endpointsByLabel.get("trx") as Endpoint;
    for (let i = 0; i < 3; i++) {
      const serve = softwareNode(endpoint, nodeState(endpoint, H));
      const limited = (request: SeenRequest) =>
        allRefusing || (refusing && i === 0)
          ? { headers: { "content-type": "application/json; charset=utf-8" }, body: REFUSAL }
          : serve(request);
      nodes.push(await startLoopbackNode(limited));
    }
    gw = await startGateway({
      upstreams: { trx: nodes.map((n, i) => ({ url: n.url, name: `n${i}` })) },
      // its probes may well pass between the refusals: the calls' answers are what counts
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
    });
    await everyNodeInRotation(gw);
    agent = testHostHttpAgent();
    tronWeb = new TronWeb({ fullHost: sdkUrl(gw, "trx") });
    for (const provider of [tronWeb.fullNode, tronWeb.solidityNode, tronWeb.eventServer])
      if (provider !== undefined) (provider.instance as unknown as AxiosLike).defaults.httpAgent = agent;
  });
  afterAll(async () => {
    agent?.destroy();
    await gw?.close();
    await Promise.all(nodes.map((n) => n.close()));
  });

  it("a broadcast a limiter refused is sent to one node, once", async () => {
    // whichever node the choice sends it to refuses it: the write is not sent on (it may not be, having
    // reached a node), and its caller gets the node's answer
    allRefusing = true;
    const sent = (node: LoopbackNode) =>
      node.requests.filter((r) => r.url.endsWith("/wallet/broadcasttransaction")).length;
    const r = await gw.call("trx", `/${KEYS.all}/wallet/broadcasttransaction`, {
      body: JSON.stringify({ txID: "0".repeat(64), raw_data: {}, signature: ["00"] }),
    });
    allRefusing = false;
    expect(nodes.map(sent).reduce((a, b) => a + b, 0)).toBe(1);
    expect(r.text).toBe(REFUSAL);
  });

  it("every getCurrentBlock() gets the head from another node", async () => {
    refusing = true;
    const failed: string[] = [];
    for (let i = 0; i < 15; i++) {
      const block = (await tronWeb.trx.getCurrentBlock()) as unknown as Record<string, unknown>;
      const number = (block.block_header as { raw_data?: { number?: number } } | undefined)?.raw_data?.number;
      if (number !== H) failed.push(JSON.stringify(block));
    }
    expect(failed).toEqual([]);
  });

  it("every eth_blockNumber on its /jsonrpc (a RateLimiterServlet too) gets the head from another node", async () => {
    refusing = true;
    const failed: string[] = [];
    for (let i = 0; i < 15; i++) {
      const r = await gw.call("trx", `/${KEYS.all}/jsonrpc`, {
        body: `{"jsonrpc":"2.0","id":${i + 1},"method":"eth_blockNumber","params":[]}`,
      });
      if (r.status !== 200 || (r.json as { result?: unknown }).result !== `0x${H.toString(16)}`)
        failed.push(r.text);
    }
    expect(failed).toEqual([]);
  });
});
