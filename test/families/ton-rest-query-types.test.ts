// toncenter's GET routes read their query by the route's parameter types (FastAPI: a `bool` from "false",
// "0", "no"…, a `List[str]` from every repeat of the name), while its JSON-RPC wrapper, which the gateway
// turns a GET into, coerces only integers' text (toncenter/ton-http-api pyTON/main.py `json_rpc`: "Some
// values (e.g. lt, shard) … can be sent as str. Coerce such str to int."). `GET
// /api/v2/getTransactions?archival=false` reached tonlib as `"archival": "false"`, a true value in Python:
// the read went to archive liteservers only; `GET /api/v2/getLibraries?libraries=A&libraries=B` reached it
// as `"libraries": "B"`, whose characters `for l in libraries` read as hashes. The gateway now writes such
// parameters as the route reads them (registry `restQuery`).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { startNodeFor } from "../support/sdk-nodes.js";

const ADDRESS = "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N";
const LIB_A = "4f".repeat(32);
const LIB_B = "5e".repeat(32);

describe("toncenter's GET routes: booleans and lists as the route reads them", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    const endpoint = endpointsByLabel.get("ton") as Endpoint;
    const started = await startNodeFor(endpoint, endpoint.mounts[0] as Endpoint["mounts"][number]);
    node = started.node;
    gw = await startGateway({
      upstreams: { ton: [started.upstream] },
      cache: { ...DEFAULT_CACHE, enabled: false },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  /** The params the node got for a GET of `path`. */
  const paramsOf = async (path: string): Promise<Record<string, unknown>> => {
    node.requests.length = 0;
    await gw.call("ton", `/${KEYS.all}${path}`, { method: "GET" });
    const call = JSON.parse(node.requests.at(-1)?.body ?? "{}") as { params?: Record<string, unknown> };
    return call.params ?? {};
  };

  it("a boolean's text (FastAPI's forms) is the boolean", async () => {
    for (const [text, value] of [
      ["false", false],
      ["0", false],
      ["no", false],
      ["true", true],
      ["1", true],
    ] as const)
      expect(
        await paramsOf(`/api/v2/getTransactions?address=${ADDRESS}&limit=5&archival=${text}`),
        text,
      ).toEqual({ address: ADDRESS, limit: "5", archival: value });
  });

  it("a list takes every repeat of its name, one alone too", async () => {
    expect(await paramsOf(`/api/v2/getLibraries?libraries=${LIB_A}&libraries=${LIB_B}`)).toEqual({
      libraries: [LIB_A, LIB_B],
    });
    expect(await paramsOf(`/getLibraries?libraries=${LIB_A}`)).toEqual({ libraries: [LIB_A] });
  });
});
