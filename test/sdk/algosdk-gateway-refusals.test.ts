import { Algodv2 } from "algosdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sdkUrl, useTestHostsForGlobalFetch } from "../sdk/resolve.js";
import { KEYS, type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import { type LoopbackNode, restResponder, startLoopbackNode } from "../support/loopback-node.js";

// algosdk (unmodified) reads an algod error's reason from the body's top-level `message`
// (client/urlTokenBaseHTTPClient.js checkHttpError: `decoded.message`), as go-algorand writes every error
// (daemon/algod/api/server/v2 ErrorResponse {"message": …}; e.g. 401 {"message":"Invalid API Token"}).
// The gateway's own refusals on `algo` were only {"error":{"code","message",…}}: the SDK showed the status
// line alone. They carry a top-level `message` with the code too (registry `errorMessage`, docs/errors.md).

const STATUS = {
  "last-round": 100,
  "last-version": "v",
  "next-version": "v",
  "next-version-round": 101,
  "next-version-supported": true,
  "stopped-at-unsupported-round": false,
  "time-since-last-round": 1,
  "catchup-time": 0,
};
const SLOW = "FNtestSlowAlgo00000000000000000";

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

describe("algosdk sees the gateway's reason for its own refusals", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => Promise<void>;
  let native: LoopbackNode;

  beforeAll(async () => {
    restore = useTestHostsForGlobalFetch();
    node = await startLoopbackNode(restResponder({ "GET /v2/status": STATUS }));
    // algod itself refusing a token, as go-algorand answers it
    native = await startLoopbackNode(() => ({
      status: 401,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "Invalid API Token" }),
    }));
    gw = await startGateway({
      upstreams: { algo: [node.url] },
      keys: [...TEST_KEYS, { key: SLOW, networks: "*", rate: { perSecond: 0.001, burst: 1 } }],
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
    await native?.close();
    await restore?.();
  });

  function client(key: string): Algodv2 {
    const url = new URL(sdkUrl(gw, "algo", key));
    return new Algodv2("", `${url.protocol}//${url.hostname}${url.pathname}`, gw.port);
  }

  it("algod's own 401 shows its reason in algosdk (the baseline)", async () => {
    const u = new URL(native.url);
    const e = await new Algodv2("bad", `${u.protocol}//${u.hostname}`, u.port)
      .status()
      .do()
      .catch((x: unknown) => x);
    expect(messageOf(e)).toContain("Invalid API Token");
  });

  it("an unknown key: the SDK's error names the reason", async () => {
    const e = await client("FNtestUnknown000000000000000000")
      .status()
      .do()
      .catch((x: unknown) => x);
    expect(messageOf(e)).toContain("401");
    expect(messageOf(e)).toContain("A valid API key is required");
  });

  it("a key over its rate: the SDK's error names the reason", async () => {
    const algod = client(SLOW);
    await algod.status().do();
    const e = await algod
      .status()
      .do()
      .catch((x: unknown) => x);
    expect(messageOf(e)).toContain("429");
    expect(messageOf(e)).toContain("Request rate limit exceeded");
    expect(messageOf(e)).toContain("RATE_LIMITED");
  });

  it("a key without the network: the SDK's error names the reason", async () => {
    const e = await client(KEYS.ethOnly)
      .status()
      .do()
      .catch((x: unknown) => x);
    expect(messageOf(e)).toContain("403");
    expect(messageOf(e)).toContain("no access to this network");
  });
});
