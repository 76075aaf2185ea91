// docs/errors.md NESTING_TOO_DEEP: "The body nests arrays or objects deeper than limits.maxJsonDepth (64).
// Checked before anything recursive runs." A REST body is held to it as a JSON-RPC body is: a 200 KB
// `[[[[…` body overflowed the stack of the cache key's canonical form (TRON getblockbynum, cache on) or of
// the contract rule's member walk (a contract-locked key on VeChain), a 500 INTERNAL logged "unhandled" for
// each; on any other route it reached the node.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import type { StaticKey } from "../../src/config/types.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

const VTHO = "0x0000000000000000000000000000456E65726779";
const LOCKED = "FNrestNestingLocked00000000000";
const LOCKED_KEY: StaticKey = {
  key: LOCKED,
  networks: "*",
  rate: { perSecond: 1000, burst: 1000 },
  settings: { contracts: [VTHO] },
};
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;
/** Arrays nested `depth` deep: 200 KB at 100,000, under the 256 KiB body cap. */
const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

describe("a REST body nested past limits.maxJsonDepth", () => {
  let vechain: LoopbackNode;
  let tron: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    const start = (label: string) =>
      startLoopbackNode(softwareNode(endpoint(label), nodeState(endpoint(label), 1_000_000)));
    [vechain, tron] = await Promise.all([start("vet"), start("trx")]);
    gw = await startGateway({
      upstreams: { vet: [vechain.url], trx: [tron.url] },
      keys: [...TEST_KEYS, LOCKED_KEY],
      cache: { ...DEFAULT_CACHE, enabled: true },
    });
    await Promise.all([everyNodeInRotation(gw, "vet", 4_000), everyNodeInRotation(gw, "trx", 4_000)]);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([vechain?.close(), tron?.close()]);
  });

  const unhandled = () => gw.logs.filter((l) => l.includes('"msg":"unhandled"')).map((l) => l.slice(0, 300));
  const code = (json: unknown) => (json as { error?: { code?: string } }).error?.code;

  it("a body read for its block and cached (TRON getblockbynum): 400, not a stack overflow", async () => {
    const body = `{"num":1,"x":${nested(100_000)}}`;
    const answer = await gw.call("trx", `/${KEYS.all}/wallet/getblockbynum`, { body });
    expect(unhandled()).toEqual([]);
    expect([answer.status, code(answer.json)]).toEqual([400, "NESTING_TOO_DEEP"]);
  });

  it("a body a key's contract list is checked on (VeChain, locked key): 400, not a stack overflow", async () => {
    const answer = await gw.call("vet", `/${LOCKED}/accounts/*`, { body: `{"clauses":${nested(100_000)}}` });
    expect(unhandled()).toEqual([]);
    expect([answer.status, code(answer.json)]).toEqual([400, "NESTING_TOO_DEEP"]);
  });

  it("any other JSON body, also sent as text/plain, is refused before the node sees it", async () => {
    tron.requests.length = 0;
    for (const type of ["application/json", "text/plain"]) {
      const answer = await gw.call("trx", `/${KEYS.all}/wallet/getnowblock`, {
        body: `{"value":${nested(1000)}}`,
        headers: { "content-type": type },
      });
      expect([type, answer.status, code(answer.json)]).toEqual([type, 400, "NESTING_TOO_DEEP"]);
    }
    expect(tron.requests.map((r) => r.url)).toEqual([]);
  });

  it("a body at the limit goes to the node; raw bytes are not read as JSON", async () => {
    tron.requests.length = 0;
    // 64 deep with the outer object
    const atLimit = await gw.call("trx", `/${KEYS.all}/wallet/getnowblock`, {
      body: `{"value":${nested(63)}}`,
    });
    expect(code(atLimit.json)).toBeUndefined();
    // a transaction's bytes may hold 0x5b ("[") any number of times: no nesting in them
    const raw = await gw.call("trx", `/${KEYS.all}/wallet/getnowblock`, {
      body: "[".repeat(1000),
      headers: { "content-type": "application/octet-stream" },
    });
    expect(code(raw.json)).not.toBe("NESTING_TOO_DEEP");
    expect(tron.requests.length).toBe(2);
  });
});
