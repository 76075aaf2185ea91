import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StaticKey } from "../../src/config/types.js";
import { type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import { type LoopbackNode, type SeenRequest, startLoopbackNode } from "../support/loopback-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";

// A key locked to its contracts (docs/plans.md, "Key settings") reading a contract's code and ABI with a GET:
// java-tron's GetContractServlet and GetContractInfoServlet read the contract from the query on a GET
// (`request.getParameter("value")`, base58 when `visible=true`) and from the body on a POST
// (java-tron framework/src/main/java/org/tron/core/services/http/GetContractServlet.java, doGet and doPost).
// The GET naming a listed contract is served; one naming another contract, or none, is refused.

const RATE = { perSecond: 10_000, burst: 10_000 };
const LISTED = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const LISTED_HEX = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c";
const OTHER = "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf";
const LOCKED = "FNtronQueryContracts0000000000";
const KEYS: StaticKey[] = [{ key: LOCKED, networks: "*", rate: RATE, settings: { contracts: [LISTED] } }];

describe("a TRON GET naming its contract in the query, from a key locked to its contracts", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  const seen: string[] = [];

  beforeAll(async () => {
    // java-tron answers a contract's code as its SmartContract JSON, a GET and a POST alike
    node = await startLoopbackNode((request: SeenRequest) => {
      seen.push(`${request.method} ${request.url}`);
      return { body: { bytecode: "6080" } };
    });
    restore = resolveTestHosts();
    gw = await startGateway({ upstreams: { trx: { "/": [node.url] } }, keys: [...TEST_KEYS, ...KEYS] });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await node?.close();
  });

  it("serves the listed contract by its query's value, in either form, and refuses another", async () => {
    for (const route of ["/wallet/getcontract", "/wallet/getcontractinfo"]) {
      const read = (query: string) => gw.call("trx", `/${LOCKED}${route}${query}`);
      const listed = await read(`?value=${LISTED}&visible=true`);
      expect(listed.status, route).toBe(200);
      expect(listed.json, route).toEqual({ bytecode: "6080" });
      expect(seen.at(-1)).toBe(`GET ${route}?value=${LISTED}&visible=true`);
      expect((await read(`?value=${LISTED_HEX}`)).status, route).toBe(200);
      for (const query of [
        `?value=${OTHER}&visible=true`,
        "",
        "?visible=true",
        `?value=${LISTED}&value=${OTHER}`,
      ]) {
        const refused = await read(query);
        expect(refused.status, `${route}${query}`).toBe(403);
        expect(refused.json, `${route}${query}`).toMatchObject({
          error: { code: "KEY_SETTING_REFUSED", setting: "contracts", route: `GET ${route}` },
        });
      }
      // a POST is read by its body alone, as java-tron's doPost reads it: the query names nothing
      const post = (value: string, query: string) =>
        gw.call("trx", `/${LOCKED}${route}${query}`, { body: JSON.stringify({ value, visible: true }) });
      expect((await post(LISTED, "")).status, route).toBe(200);
      expect((await post(OTHER, `?value=${LISTED}`)).status, route).toBe(403);
    }
  });
});
