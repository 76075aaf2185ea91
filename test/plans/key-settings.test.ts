import { generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { StaticKey } from "../../src/config/types.js";
import { checkedSettings, KeyRules } from "../../src/keys/key-settings.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody, startGateway, TEST_KEYS } from "../support/gateway.js";
import {
  firstOf,
  jsonRpcResponder,
  type LoopbackNode,
  restResponder,
  startLoopbackNode,
} from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { Client } from "../support/ws-client.js";

// A key's security settings (docs/plans.md, "Key settings"): each list allowed and refused, over HTTP and
// over a WebSocket, and a JWT that is missing, expired or signed by a key the owner did not upload. A refusal
// names the setting, never the key.

const RATE = { perSecond: 10_000, burst: 10_000 };
const AA = "0x00000000000000000000000000000000000000aa";
const BB = "0x00000000000000000000000000000000000000bb";
const TRON_CONTRACT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

const ec = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const stranger = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const pem = (key: KeyObject) => key.export({ type: "spki", format: "pem" }).toString();

/** A compact JWT signed with `key` (ES256 for EC, RS256 for RSA), expiring `exp` seconds from now (never: none). */
function jwt(key: KeyObject, exp: number | undefined, kid?: string, extra: object = {}): string {
  const alg = key.asymmetricKeyType === "ec" ? "ES256" : "RS256";
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part({ alg, typ: "JWT", ...(kid === undefined ? {} : { kid }), ...extra })}.${part({
    sub: "test",
    ...(exp === undefined ? {} : { exp: Math.floor(Date.now() / 1000) + exp }),
  })}`;
  const signature = sign(
    "sha256",
    Buffer.from(signed),
    alg === "ES256" ? { key, dsaEncoding: "ieee-p1363" } : key,
  );
  return `${signed}.${signature.toString("base64url")}`;
}

const KEY = {
  origins: "FNsetOrigins000000000000000000",
  ipsOther: "FNsetIpsOther00000000000000000",
  ipsLoop: "FNsetIpsLoop000000000000000000",
  methods: "FNsetMethods000000000000000000",
  contracts: "FNsetContracts0000000000000000",
  dedicatedContracts: "FNsetContractsDedicated0000000",
  jwt: "FNsetJwt0000000000000000000000",
} as const;

const KEYS_WITH_SETTINGS: StaticKey[] = [
  {
    key: KEY.origins,
    networks: "*",
    rate: RATE,
    settings: {
      origins: [
        "https://app.example.com",
        "*.example.org",
        "chrome-extension://abcdefghijklmnopabcdefghijklmnop",
        "safari-web-extension://e522f5f2-6b0c-4d1e-9a3b-0c1d2e3f4a5b",
      ],
    },
  },
  { key: KEY.ipsOther, networks: "*", rate: RATE, settings: { ips: ["10.0.0.0/8", "2001:db8::/32"] } },
  { key: KEY.ipsLoop, networks: "*", rate: RATE, settings: { ips: ["127.0.0.1"] } },
  {
    key: KEY.methods,
    networks: "*",
    rate: RATE,
    settings: { methods: ["eth_blockNumber", "eth_get*", "eth_subscribe"] },
  },
  { key: KEY.contracts, networks: "*", rate: RATE, settings: { contracts: [AA, TRON_CONTRACT] } },
  // traces of a call are on the dedicated plan
  {
    key: KEY.dedicatedContracts,
    networks: "*",
    plan: "dedicated",
    rate: RATE,
    settings: { contracts: [AA] },
  },
  {
    key: KEY.jwt,
    networks: "*",
    rate: RATE,
    settings: { jwtKeys: [{ id: "ec-1", pem: pem(ec.publicKey) }, { pem: pem(rsa.publicKey) }] },
  },
];

interface RpcAnswer {
  result?: unknown;
  error?: { code: number; data?: Record<string, unknown> };
}

describe("key settings", () => {
  let node: LoopbackNode;
  let ws: LoopbackWsNode;
  let gw: RunningGateway;
  let restore: () => void = () => {};
  const call = (key: string, body: string, headers: Record<string, string> = {}) =>
    gw.call("eth", `/${key}`, { body, headers });
  const refusal = (answer: { status: number; json: unknown; text: string }) => {
    const error = (answer.json as RpcAnswer).error;
    return { status: answer.status, code: error?.code, data: error?.data };
  };

  beforeAll(async () => {
    node = await startLoopbackNode(
      firstOf(
        jsonRpcResponder({
          eth_blockNumber: "0x10",
          eth_chainId: "0x1",
          eth_getBalance: "0x0",
          eth_call: "0x",
          eth_getLogs: [],
        }),
        restResponder({
          "POST /wallet/triggerconstantcontract": { result: { result: true } },
          "POST /wallet/getcontract": { bytecode: "6080" },
          "POST /wallet/getcontractinfo": { runtimecode: "6080" },
        }),
      ),
    );
    ws = await startLoopbackWsNode({
      results: { eth_blockNumber: "0x10", eth_chainId: "0x1", eth_call: "0x" },
      subscriptions: { eth_subscribe: { notification: "eth_subscription", unsubscribe: "eth_unsubscribe" } },
    });
    restore = resolveTestHosts();
    gw = await startGateway({
      upstreams: { eth: [{ url: node.url, ws: ws.wsUrl }], trx: { "/": [node.url] } },
      trustedProxies: ["127.0.0.1"],
      keys: [...TEST_KEYS, ...KEYS_WITH_SETTINGS],
    });
  });
  afterAll(async () => {
    restore();
    await gw?.close();
    await Promise.all([node?.close(), ws?.close()]);
  });

  it("origins: the page's Origin, with wildcard subdomains; none at all is refused", async () => {
    const body = rpcBody("eth_blockNumber");
    expect((await call(KEY.origins, body, { origin: "https://app.example.com" })).status).toBe(200);
    expect((await call(KEY.origins, body, { origin: "https://shop.example.org" })).status).toBe(200);
    expect((await call(KEY.origins, body, { origin: "http://deep.shop.example.org" })).status).toBe(200);
    // a browser extension's origin: its scheme and id
    const extension = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";
    expect((await call(KEY.origins, body, { origin: extension })).status).toBe(200);
    // Safari writes its extension's id in capitals
    const safari = "safari-web-extension://E522F5F2-6B0C-4D1E-9A3B-0C1D2E3F4A5B";
    expect((await call(KEY.origins, body, { origin: safari })).status).toBe(200);
    for (const origin of [
      "chrome-extension://ponmlkjihgfedcbaponmlkjihgfedcba",
      "https://abcdefghijklmnopabcdefghijklmnop",
      "https://evil.example",
      "https://example.org",
      "https://app.example.com.evil.example",
    ]) {
      const refused = refusal(await call(KEY.origins, body, { origin }));
      expect(refused).toMatchObject({
        status: 403,
        code: -32047,
        data: { code: "KEY_SETTING_REFUSED", setting: "origins" },
      });
    }
    const none = await call(KEY.origins, body);
    expect(refusal(none).data?.setting).toBe("origins");
    expect(none.text).not.toContain(KEY.origins);
  });

  it("ips: the client's address or block, read through trusted proxies' X-Forwarded-For", async () => {
    const body = rpcBody("eth_blockNumber");
    expect((await call(KEY.ipsLoop, body)).status).toBe(200);
    expect(refusal(await call(KEY.ipsOther, body))).toMatchObject({ status: 403, data: { setting: "ips" } });
    expect((await call(KEY.ipsOther, body, { "x-forwarded-for": "10.20.30.40" })).status).toBe(200);
    expect((await call(KEY.ipsOther, body, { "x-forwarded-for": "2001:db8::7" })).status).toBe(200);
    expect(refusal(await call(KEY.ipsOther, body, { "x-forwarded-for": "11.0.0.1" })).data?.setting).toBe(
      "ips",
    );
  });

  it("methods: the listed ones and patterns, call by call in a batch", async () => {
    expect((await call(KEY.methods, rpcBody("eth_blockNumber"))).status).toBe(200);
    expect((await call(KEY.methods, rpcBody("eth_getBalance", [AA, "latest"]))).status).toBe(200);
    const refused = refusal(await call(KEY.methods, rpcBody("eth_chainId")));
    expect(refused).toMatchObject({
      status: 403,
      code: -32047,
      data: { setting: "methods", method: "eth_chainId" },
    });
    const batch = await call(
      KEY.methods,
      JSON.stringify([
        JSON.parse(rpcBody("eth_blockNumber", [], 1)),
        JSON.parse(rpcBody("eth_chainId", [], 2)),
      ]),
    );
    expect(batch.status).toBe(200);
    const answers = batch.json as RpcAnswer[];
    expect(answers.find((a) => a.result !== undefined)?.result).toBe("0x10");
    expect(answers.find((a) => a.error !== undefined)?.error?.data?.setting).toBe("methods");
  });

  it("contracts: eth_call's to and eth_getLogs' addresses; a log query over every contract is refused", async () => {
    const ok = (params: unknown[], method = "eth_call") => call(KEY.contracts, rpcBody(method, params));
    expect((await ok([{ to: AA, data: "0x" }, "latest"])).status).toBe(200);
    expect((await ok([{ to: AA.toUpperCase().replace("0X", "0x"), data: "0x" }, "latest"])).status).toBe(200);
    expect(refusal(await ok([{ to: BB, data: "0x" }, "latest"]))).toMatchObject({
      status: 403,
      data: { setting: "contracts" },
    });
    expect((await ok([{ address: AA, fromBlock: "0x1", toBlock: "0x2" }], "eth_getLogs")).status).toBe(200);
    expect((await ok([{ address: [AA], fromBlock: "0x1", toBlock: "0x2" }], "eth_getLogs")).status).toBe(200);
    expect((await ok([{ address: [AA, BB], fromBlock: "0x1", toBlock: "0x2" }], "eth_getLogs")).status).toBe(
      403,
    );
    expect((await ok([{ fromBlock: "0x1", toBlock: "0x2" }], "eth_getLogs")).status).toBe(403);
    // a call that names no contract is not the list's concern
    expect((await ok([], "eth_blockNumber")).status).toBe(200);
  });

  it("contracts: every call that runs contract code, and reads of a contract's code and storage, are held to the list", async () => {
    /** 200, or the setting that refused the call. */
    const status = async (method: string, params: unknown[]) => {
      const answer = await call(KEY.dedicatedContracts, rpcBody(method, params));
      return answer.status === 200 ? 200 : (refusal(answer) as { data?: { setting?: string } }).data?.setting;
    };
    const simulate = (...tos: (string | undefined)[]) => [
      { blockStateCalls: [{ calls: tos.map((to) => (to === undefined ? { data: "0x00" } : { to })) }] },
      "latest",
    ];
    for (const method of ["eth_createAccessList", "debug_traceCall", "trace_call"]) {
      const params = method === "trace_call" ? [["trace"], "latest"] : ["latest"];
      expect(await status(method, [{ to: BB }, ...params]), method).toBe("contracts");
    }
    expect(await status("eth_createAccessList", [{ to: AA }, "latest"])).toBe(200);
    expect(await status("eth_simulateV1", simulate(AA))).toBe(200);
    expect(await status("eth_simulateV1", simulate(AA, BB))).toBe("contracts");
    // a simulated call that creates a contract names none
    expect(await status("eth_simulateV1", simulate(AA, undefined))).toBe("contracts");
    expect(await status("debug_traceCallMany", [[{ transactions: [{ to: AA }, { to: BB }] }]])).toBe(
      "contracts",
    );
    expect(await status("trace_callMany", [[[{ to: BB }, ["trace"]]], "latest"])).toBe("contracts");
    expect(await status("eth_getCode", [BB, "latest"])).toBe("contracts");
    expect(await status("eth_getStorageAt", [BB, "0x0", "latest"])).toBe("contracts");
    // storage by address: each address eth_getStorageValues names (its first param's member names), the
    // address debug_storageRangeAt names; debug_accountRange lists every account and names none
    expect(await status("eth_getStorageValues", [{ [AA]: ["0x0"] }, "latest"])).toBe(200);
    expect(await status("eth_getStorageValues", [{ [AA]: ["0x0"], [BB]: ["0x0"] }, "latest"])).toBe(
      "contracts",
    );
    expect(await status("debug_storageRangeAt", [`0x${"0".repeat(64)}`, 0, BB, "0x0", 10])).toBe("contracts");
    expect(await status("debug_storageRangeAt", [`0x${"0".repeat(64)}`, 0, AA, "0x0", 10])).toBe(200);
    expect(await status("debug_accountRange", ["latest", "0x", 10, true, true, false])).toBe("contracts");
    // transactions sent encoded run whatever contracts they call, which the gateway cannot read: a signed
    // transaction to any contract, traced with the `trace` type (each frame's output), or a block's RLP
    const raw = `0x02f8${"ab".repeat(60)}`;
    expect(await status("trace_rawTransaction", [raw, ["trace"]])).toBe("contracts");
    expect(await status("debug_traceBlock", [raw, { tracer: "callTracer" }])).toBe("contracts");
    expect(await status("eth_getCode", [AA, "latest"])).toBe(200);
    // an account's own balance and nonce are not
    expect(await status("eth_getBalance", [BB, "latest"])).toBe(200);
    // state put in place for the call runs code no list names: code at the listed address that reads another
    const code = { [AA]: { code: "0x6000" } };
    expect(await status("eth_call", [{ to: AA }, "latest", code])).toBe("contracts");
    expect(await status("eth_estimateGas", [{ to: AA }, "latest", code])).toBe("contracts");
    expect(await status("debug_traceCall", [{ to: AA }, "latest", { stateOverrides: code }])).toBe(
      "contracts",
    );
    expect(await status("trace_call", [{ to: AA }, ["trace"], "latest", code])).toBe("contracts");
    const bundle = [{ transactions: [{ to: AA }] }];
    expect(await status("debug_traceCallMany", [bundle, {}, { stateOverrides: code }])).toBe("contracts");
    expect(await status("eth_createAccessList", [{ to: AA }, "latest", code])).toBe("contracts");
    expect(await status("trace_call", [{ to: AA }, ["trace"], "latest"])).toBe(200);
    const simulated = simulate(AA);
    (simulated[0] as { blockStateCalls: object[] }).blockStateCalls.push({ stateOverrides: code, calls: [] });
    expect(await status("eth_simulateV1", simulated)).toBe("contracts");
    // none, or an empty set, is no override
    expect(await status("eth_call", [{ to: AA }, "latest", {}])).toBe(200);
    expect(await status("eth_call", [{ to: AA }, "latest", null])).toBe(200);
    expect(await status("debug_traceCall", [{ to: AA }, "latest", { tracer: "callTracer" }])).toBe(200);
  });

  it("contracts: a trace that answers every touched contract's state (prestateTracer, stateDiff) is refused, saying why", async () => {
    const answer = (key: string, method: string, params: unknown[]) => call(key, rpcBody(method, params));
    /** 200, or the refusal's data. */
    const status = async (method: string, params: unknown[]) => {
      const r = await answer(KEY.dedicatedContracts, method, params);
      return r.status === 200 ? 200 : refusal(r);
    };
    const hash = `0x${"ab".repeat(32)}`;
    const refused = (method: string) => ({
      status: 403,
      code: -32047,
      data: {
        code: "KEY_SETTING_REFUSED",
        setting: "contracts",
        method,
        reason: expect.stringMatching(/state \(storage\) of every contract/),
      },
    });
    const prestate = { tracer: "prestateTracer" };
    const cases: [string, unknown[]][] = [
      ["debug_traceCall", [{ to: AA }, "latest", prestate]],
      [
        "debug_traceCall",
        [{ to: AA }, "latest", { tracer: "prestateTracer", tracerConfig: { diffMode: true } }],
      ],
      ["debug_traceCallMany", [[{ transactions: [{ to: AA }] }], {}, prestate]],
      ["debug_traceTransaction", [hash, prestate]],
      ["debug_traceBlockByNumber", ["0x1", prestate]],
      ["debug_traceBlockByHash", [hash, prestate]],
      // a tracer of the caller's own code reads any state; the default opcode logger shows each step's storage
      ["debug_traceTransaction", [hash, { tracer: "{ result: function () { return 1; } }" }]],
      ["debug_traceTransaction", [hash]],
      ["debug_traceTransaction", [hash, { disableStack: true }]],
      ["trace_call", [{ to: AA }, ["trace", "stateDiff"], "latest"]],
      ["trace_call", [{ to: AA }, ["vmTrace"], "latest"]],
      [
        "trace_callMany",
        [
          [
            [{ to: AA }, ["trace"]],
            [{ to: AA }, ["stateDiff"]],
          ],
          "latest",
        ],
      ],
      ["trace_replayTransaction", [hash, ["stateDiff"]]],
      ["trace_replayBlockTransactions", ["0x1", ["trace", "stateDiff"]]],
    ];
    for (const [method, params] of cases)
      expect(await status(method, params), `${method} ${JSON.stringify(params)}`).toMatchObject(
        refused(method),
      );
    // the reason names what was asked, where, and what may be
    const why = refusal(await answer(KEY.dedicatedContracts, "debug_traceTransaction", [hash, prestate]));
    expect(why.data?.reason).toBe(
      'a key limited to its contracts may not send "prestateTracer" at params.1.tracer: its answer holds the state (storage) of every contract the call or transaction touches, named or not; it may ask there for "callTracer", "flatCallTracer", "4byteTracer", "noopTracer"',
    );
    // the same refusal as a contract the list does not name: the lock's setting, its code and status
    const other = refusal(await answer(KEY.dedicatedContracts, "eth_call", [{ to: BB }, "latest"]));
    expect({ status: why.status, code: why.code, data: { setting: why.data?.setting } }).toEqual({
      status: other.status,
      code: other.code,
      data: { setting: other.data?.setting },
    });
    // traces of calls are not state: allowed to the locked key
    for (const [method, params] of [
      ["debug_traceCall", [{ to: AA }, "latest", { tracer: "callTracer" }]],
      ["debug_traceTransaction", [hash, { tracer: "callTracer", tracerConfig: { onlyTopCall: true } }]],
      ["debug_traceBlockByNumber", ["0x1", { tracer: "4byteTracer" }]],
      ["trace_call", [{ to: AA }, ["trace"], "latest"]],
      ["trace_callMany", [[[{ to: AA }, ["trace"]]], "latest"]],
      ["trace_replayTransaction", [hash, ["trace"]]],
      ["trace_replayBlockTransactions", ["0x1", ["trace"]]],
    ] as [string, unknown[]][])
      expect(await status(method, params), `${method} ${JSON.stringify(params)}`).toBe(200);
    // a batch: the dumping trace alone is refused
    const batch = await call(
      KEY.dedicatedContracts,
      JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "debug_traceTransaction", params: [hash, prestate] },
        { jsonrpc: "2.0", id: 2, method: "eth_blockNumber", params: [] },
      ]),
    );
    expect(batch.status).toBe(200);
    const byId = (id: number) => (batch.json as { id: number }[]).find((a) => a.id === id);
    expect(byId(1)).toMatchObject({
      error: { data: { setting: "contracts", method: "debug_traceTransaction" } },
    });
    expect(byId(2)).toMatchObject({ result: "0x10" });
    // a tracer, an override or an address in another case, which geth reads as the member (the last of
    // two): refused before it could pass the lock as the allowed spelling
    for (const [method, params, member] of [
      ["debug_traceTransaction", [hash, { tracer: "callTracer", Tracer: "prestateTracer" }], "Tracer"],
      [
        "debug_traceCall",
        [{ to: AA }, "latest", { tracer: "callTracer", TRACER: "prestateTracer" }],
        "TRACER",
      ],
      [
        "debug_traceCall",
        [{ to: AA }, "latest", { tracer: "callTracer", StateOverrides: {} }],
        "StateOverrides",
      ],
      ["eth_call", [{ to: AA, tO: BB }, "latest"], "tO"],
    ] as [string, unknown[], string][]) {
      const r = await answer(KEY.dedicatedContracts, method, params);
      expect(refusal(r), `${method} ${member}`).toMatchObject({
        status: 400,
        code: -32600,
        data: { code: "INVALID_REQUEST", member },
      });
    }
    // a key not locked to contracts asks for any of them
    expect((await answer(KEYS.dedicated, "debug_traceTransaction", [hash, prestate])).status).toBe(200);
    expect((await answer(KEYS.dedicated, "trace_replayTransaction", [hash, ["stateDiff"]])).status).toBe(200);
  });

  it("contracts on TRON's REST API: the body's contract_address, where the registry says", async () => {
    const trigger = (contract: string) =>
      gw.call("trx", `/${KEY.contracts}/wallet/triggerconstantcontract`, {
        body: JSON.stringify({
          owner_address: TRON_CONTRACT,
          contract_address: contract,
          function_selector: "name()",
          visible: true,
        }),
      });
    expect((await trigger(TRON_CONTRACT)).status).toBe(200);
    // the same contract in hex, as TronWeb sends it by default, is the listed one
    expect((await trigger("41a614f803b6fd780986a42c78ec9c7f77e6ded13c")).status).toBe(200);
    const refused = await trigger("TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf");
    expect(refused.status).toBe(403);
    expect((refused.json as { error: { code: string } }).error.code).toBe("KEY_SETTING_REFUSED");
    // a contract's code and ABI, as eth_getCode's: TronWeb's getContract sends the address as `value`
    for (const route of ["/wallet/getcontract", "/wallet/getcontractinfo"]) {
      const read = (value: string) =>
        gw.call("trx", `/${KEY.contracts}${route}`, { body: JSON.stringify({ value, visible: true }) });
      expect((await read(TRON_CONTRACT)).status, route).toBe(200);
      expect((await read("TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf")).status, route).toBe(403);
    }
    // and on every route the registry says names one: the solidity and PBFT APIs' as the full node's
    const routes = (endpointsByLabel.get("trx")?.mounts ?? [])
      .flatMap((m) => Object.keys(m.policy.contracts ?? {}))
      .filter((route) => route.startsWith("POST "));
    expect(routes).toContain("POST /walletsolidity/triggerconstantcontract");
    for (const route of routes) {
      const other = await gw.call("trx", `/${KEY.contracts}${route.split(" ")[1]}`, {
        body: JSON.stringify({
          owner_address: TRON_CONTRACT,
          contract_address: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
        }),
      });
      expect(other.status, route).toBe(403);
    }
  });

  it("a JWT with every call: ES256 or RS256 from an uploaded key; missing, expired or a stranger's is refused", async () => {
    const body = rpcBody("eth_blockNumber");
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    expect((await call(KEY.jwt, body, bearer(jwt(ec.privateKey, 60, "ec-1")))).status).toBe(200);
    expect((await call(KEY.jwt, body, bearer(jwt(rsa.privateKey, 60)))).status).toBe(200);
    const reason = async (headers: Record<string, string>) => {
      const answer = await call(KEY.jwt, body, headers);
      expect(answer.status).toBe(401);
      expect((answer.json as RpcAnswer).error?.code).toBe(-32048);
      return (answer.json as RpcAnswer).error?.data?.reason;
    };
    expect(await reason({})).toBe("missing");
    expect(await reason(bearer(jwt(ec.privateKey, -120)))).toBe("expired");
    expect(await reason(bearer(jwt(stranger.privateKey, 60)))).toBe("bad signature");
    expect(await reason(bearer("not.a.jwt"))).toBe("malformed");
    // signed by the uploaded key, but valid for ever: not a malformed token, one its signer must give an exp
    expect(await reason(bearer(jwt(ec.privateKey, undefined)))).toBe("no exp claim");
    // signed by the uploaded key, but naming an extension the gateway cannot honour
    const critical = jwt(ec.privateKey, 60, "ec-1", { crit: ["exp-hint"], "exp-hint": 1 });
    expect(await reason(bearer(critical))).toBe("unsupported critical header");
  });

  it("a WebSocket opened with a JWT lasts as long as the token: it closes (1008) when the token expires", async () => {
    // expired 28 s ago: valid for 2 s more, within the 30 s of clock difference forgiven
    const token = jwt(ec.privateKey, -28, "ec-1");
    const client = await Client.open(`ws://eth.${DOMAIN}:${gw.port}/${KEY.jwt}`, {
      authorization: `Bearer ${token}`,
    });
    expect((await client.call("eth_blockNumber")).result).toBe("0x10");
    const closed = await client.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toContain("JWT expired");
  });

  it("a browser's WebSocket, which cannot send headers, carries its JWT as the bearer.<JWT> subprotocol", async () => {
    const url = `ws://eth.${DOMAIN}:${gw.port}/${KEY.jwt}`;
    const token = jwt(ec.privateKey, 60, "ec-1");
    // as `new WebSocket(url, ["bearer", "bearer." + jwt])` in a browser: the answer names `bearer`, not the token
    const socket = new WebSocket(url, ["bearer", `bearer.${token}`]);
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    try {
      expect(socket.protocol).toBe("bearer");
      const answer = new Promise<string>((resolve) =>
        socket.once("message", (data) => resolve(String(data))),
      );
      socket.send(rpcBody("eth_blockNumber"));
      expect(JSON.parse(await answer).result).toBe("0x10");
    } finally {
      socket.close();
    }
    // a token that is not valid is refused at the upgrade as in the header
    const refused = await new Promise<number>((resolve) => {
      const bad = new WebSocket(url, ["bearer", `bearer.${jwt(ec.privateKey, -120, "ec-1")}`]);
      bad.once("error", () => {});
      bad.once("unexpected-response", (_req, res) => {
        resolve(res.statusCode ?? 0);
        bad.terminate();
      });
    });
    expect(refused).toBe(401);
    // the token alone offered: a browser would fail the 101 that names no subprotocol it offered, so the
    // upgrade is refused, saying what to offer
    const alone = await new Promise<{ status: number; body: string }>((resolve) => {
      const socket = new WebSocket(url, [`bearer.${token}`]);
      socket.once("error", () => {});
      socket.once("unexpected-response", (_req, res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
    });
    expect(alone.status).toBe(400);
    expect(alone.body).toContain("needs bearer offered too");
    // behind a proxy that sends its own Authorization (Basic), the subprotocol still carries the token
    const behindProxy = new WebSocket(url, ["bearer", `bearer.${token}`], {
      headers: { authorization: "Basic cHJveHk6cHJveHk=" },
    });
    await new Promise((resolve, reject) => behindProxy.once("open", resolve).once("error", reject));
    behindProxy.close();
  });

  it("over a WebSocket: origin, IP and JWT at the upgrade; methods and contracts on every message", async () => {
    const url = (key: string) => `ws://eth.${DOMAIN}:${gw.port}/${key}`;
    const upgrade = await Client.refused(url(KEY.origins));
    expect(upgrade.status).toBe(403);
    expect(JSON.stringify(upgrade.body)).toContain("origins");
    expect((await Client.refused(url(KEY.jwt))).status).toBe(401);
    const methods = await Client.open(url(KEY.methods));
    try {
      expect((await methods.call("eth_blockNumber")).result).toBe("0x10");
      const refused = await methods.call("eth_chainId");
      expect(refused.error?.code).toBe(-32047);
      expect(refused.error?.data?.setting).toBe("methods");
      // what the key may open, it may cancel: eth_unsubscribe is not on its list, eth_subscribe is
      const id = (await methods.call("eth_subscribe", ["newHeads"])).result as string;
      expect((await methods.call("eth_unsubscribe", [id])).result).toBe(true);
      expect(methods.isOpen).toBe(true);
    } finally {
      methods.close();
    }
    const contracts = await Client.open(url(KEY.contracts));
    try {
      expect((await contracts.call("eth_call", [{ to: AA, data: "0x" }, "latest"])).result).toBe("0x");
      expect(
        (await contracts.call("eth_call", [{ to: BB, data: "0x" }, "latest"])).error?.data?.setting,
      ).toBe("contracts");
      // a log filter is held to the list as eth_getLogs is
      expect((await contracts.call("eth_newFilter", [{ address: BB }])).error?.data?.setting).toBe(
        "contracts",
      );
      expect((await contracts.call("eth_newFilter", [{ fromBlock: "0x0" }])).error?.data?.setting).toBe(
        "contracts",
      );
      // a logs subscription is held to the list as eth_getLogs is; heads are not the list's concern
      const logsOf = async (filter: object) =>
        (await contracts.call("eth_subscribe", ["logs", filter])).error;
      expect((await logsOf({ address: BB }))?.data?.setting).toBe("contracts");
      expect((await logsOf({}))?.data?.setting).toBe("contracts");
      expect(await logsOf({ address: AA })).toBeUndefined();
      expect((await contracts.call("eth_subscribe", ["newHeads"])).error).toBeUndefined();
    } finally {
      contracts.close();
    }
  });
});

describe("checking settings a customer sends", () => {
  it("takes lists of the right forms, drops empty ones, and names the entry that is wrong", () => {
    expect(checkedSettings({ origins: ["HTTPS://App.Example.com/"], ips: [], methods: ["eth_*"] })).toEqual({
      origins: ["https://app.example.com"],
      methods: ["eth_*"],
    });
    const wrong = (settings: unknown) => {
      try {
        checkedSettings(settings);
      } catch (error) {
        return (error as { detail: { field: string } }).detail.field;
      }
      return undefined;
    };
    expect(wrong({ ips: ["10.0.0.0/33"] })).toBe("ips[0]");
    expect(wrong({ origins: ["https://exa mple.com"] })).toBe("origins[0]");
    expect(wrong({ contracts: [AA, "0x12"] })).toBe("contracts[1]");
    // a checksum that fails is a typo: EIP-55's mixed case, TRON's base58check
    expect(wrong({ contracts: ["0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"] })).toBeUndefined();
    expect(wrong({ contracts: ["0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"] })).toBe("contracts[0]");
    expect(wrong({ contracts: [TRON_CONTRACT] })).toBeUndefined();
    expect(wrong({ contracts: [`${TRON_CONTRACT.slice(0, -1)}u`] })).toBe("contracts[0]");
    // a port no origin has; an IPv6 host and one in other letters than ASCII's are origins a browser sends
    expect(wrong({ origins: ["https://a.example.org:99999"] })).toBe("origins[0]");
    expect(wrong({ origins: ["http://[:::::]"] })).toBe("origins[0]");
    expect(wrong({ origins: ["http://[1.2.3.4]"] })).toBe("origins[0]");
    expect(checkedSettings({ origins: ["http://[0:0:0:0:0:0:0:1]:3000"] })).toEqual({
      origins: ["http://[::1]:3000"],
    });
    expect(checkedSettings({ origins: ["http://[::1]:3000", "https://bücher.example"] })).toEqual({
      origins: ["http://[::1]:3000", "https://xn--bcher-kva.example"],
    });
    expect(wrong({ jwtKeys: [{ pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----" }] })).toBe(
      "jwtKeys[0]",
    );
    expect(wrong({ methods: Array.from({ length: 31 }, () => "eth_call") })).toBe("methods");
    // a private key pasted by mistake is refused, not turned into its public half and kept
    const privatePem = ec.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    expect(wrong({ jwtKeys: [{ pem: privatePem }] })).toBe("jwtKeys[0]");
    expect(wrong({ colours: ["red"] })).toBe("colours");
    expect(KeyRules.of({})).toBeUndefined();
  });

  it("an IPv6 origin and one of punycode match what a browser sends", () => {
    const rules = KeyRules.of(checkedSettings({ origins: ["http://[::1]:3000", "https://bücher.example"] }));
    expect(rules?.allowsOrigin("http://[::1]:3000")).toBe(true);
    expect(rules?.allowsOrigin("http://[::1]:3001")).toBe(false);
    expect(rules?.allowsOrigin("https://xn--bcher-kva.example")).toBe(true);
  });

  it("an origin saved with its scheme's own port matches what a browser sends, which never names it", () => {
    expect(checkedSettings({ origins: ["https://app.example.com:443", "http://b.example:80"] })).toEqual({
      origins: ["https://app.example.com", "http://b.example"],
    });
    // saved before it was kept without it, or with no scheme: the port compares as the browser's default
    const rules = KeyRules.of({
      origins: ["https://app.example.com:443", "c.example:443", "d.example:8443"],
    });
    expect(rules?.allowsOrigin("https://app.example.com")).toBe(true);
    expect(rules?.allowsOrigin("https://app.example.com:443")).toBe(true);
    expect(rules?.allowsOrigin("https://c.example")).toBe(true);
    expect(rules?.allowsOrigin("http://c.example")).toBe(false);
    expect(rules?.allowsOrigin("https://d.example")).toBe(false);
    expect(rules?.allowsOrigin("https://d.example:8443")).toBe(true);
  });
});
