import { HttpProvider, WsProvider } from "@polkadot/api";
import { FetchRequest, JsonRpcProvider, Network, type WebSocketLike, WebSocketProvider } from "ethers";
import { createClient, HttpRequestError, http, LimitExceededRpcError, RpcRequestError } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { PLAN_FIELDS } from "../../src/config/defaults.js";
import type { PlanSpec } from "../../src/config/types.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { eventually } from "../support/eventually.js";
import {
  DOMAIN,
  KEYS,
  type RunningGateway,
  startGateway,
  TEST_KEYS,
  TEST_PLANS,
} from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type LoopbackWsNode, startLoopbackWsNode } from "../support/loopback-ws-node.js";
import { resolveTestHosts } from "../support/test-hosts.js";
import { sdkUrl, testHostDispatcher, testHostHttpAgent, useTestHostsForGlobalFetch } from "./resolve.js";

// What unmodified SDKs do with the gateway's own refusals, as docs/errors.md ("Through an SDK") tells callers:
// each claim there is checked here against the SDK version package.json pins, so an SDK upgrade that changes
// it fails this file. EVM against a real anvil; Substrate's refusals are made before any node is asked (the
// loopback node answers as a Substrate node would if it were: jsonrpsee's {"jsonrpc","id","result"}).
//
// The SDKs' code that decides it:
// - ethers 6 lib.esm/utils/fetch.js, FetchRequest#send: a 429 is sent again up to 12 times, after
//   `parseInt(Retry-After)` milliseconds (the header is delta-seconds, RFC 9110 §10.2.3); `retryFunc` runs first.
//   providers/provider-jsonrpc.js #start: network detection failing is tried again every second.
//   providers/provider-websocket.js: no `onerror` on the socket it makes from a URL, so `ws` throws its
//   "Unexpected server response" (any refused upgrade) as an uncaught error: the process exits. Not run here.
// - viem utils/buildRequest.ts shouldRetry: -32005, or HTTP 403/408/413/429/500/502/503/504, is retried
//   (`retryCount`, 3); the delay is Retry-After's seconds when the answer had one, else 150 ms doubled.
// - @polkadot/rpc-provider http/index.js: a non-2xx answer throws `[status]: statusText`, the body unread;
//   ws/index.js: every close and every failed open is followed by a new connect after `autoConnectMs`.

const plan = (fields: Partial<PlanSpec>): PlanSpec => ({
  ...PLAN_FIELDS,
  computeUnitRate: { perSecond: 1_000_000, burst: 1_000_000 },
  ...fields,
});
const WIDE = { perSecond: 10_000, burst: 10_000 };
/** One call, then 100 s to the next: Retry-After 100. */
const SLOW = "FNslow00000000000000000000000000";
/** One call, then 1 s to the next. A key's first 8 characters are its rate's id: each begins otherwise. */
const BRISK = "FNbrskA0000000000000000000000000";
const BRISK_VIEM = "FNbrskB0000000000000000000000000";
/** Its day's 10 compute units are spent by one eth_blockNumber. */
const SPENT = "FNspent0000000000000000000000000";

describe("unmodified SDKs and the gateway's own refusals", () => {
  let anvil: Anvil;
  let dotNode: LoopbackNode;
  let dotWs: LoopbackWsNode;
  let gw: RunningGateway;
  let restoreLookup: () => void;
  let restoreFetch: () => Promise<void>;
  const dispatcher = testHostDispatcher();
  const agent = testHostHttpAgent();

  beforeAll(async () => {
    restoreLookup = resolveTestHosts();
    restoreFetch = useTestHostsForGlobalFetch();
    anvil = await startAnvil();
    dotNode = await startLoopbackNode(jsonRpcResponder({ chain_getHeader: { number: "0x10" } }));
    dotWs = await startLoopbackWsNode({ results: { chain_getHeader: { number: "0x10" } } });
    gw = await startGateway({
      upstreams: { eth: [anvil.url], dot: [{ url: dotNode.url, ws: dotWs.wsUrl }] },
      plans: { ...TEST_PLANS, daily: plan({ dailyQuota: 10 }) },
      keys: [
        ...TEST_KEYS,
        { key: SLOW, networks: "*", rate: { perSecond: 0.01, burst: 1 } },
        { key: BRISK, networks: "*", rate: { perSecond: 1, burst: 1 } },
        { key: BRISK_VIEM, networks: "*", rate: { perSecond: 1, burst: 1 } },
        { key: SPENT, networks: "*", plan: "daily", rate: WIDE },
      ],
    });
    const spend = await gw.call("eth", `/${SPENT}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    });
    expect(spend.status).toBe(200);
  });
  afterAll(async () => {
    agent.destroy();
    await dispatcher.close();
    await gw?.close();
    await Promise.all([anvil?.stop(), dotNode?.close(), dotWs?.close()]);
    await restoreFetch?.();
    restoreLookup?.();
  });

  /** An ethers request to `key` on `eth`, and the time of each HTTP answer it got. */
  function ethersRequest(key: string): { request: FetchRequest; answers: { at: number; status: number }[] } {
    const request = new FetchRequest(sdkUrl(gw, "eth", key));
    const inner = FetchRequest.createGetUrlFunc({ agent });
    const answers: { at: number; status: number }[] = [];
    request.getUrlFunc = async (req, signal) => {
      const response = await inner(req, signal);
      answers.push({ at: performance.now(), status: response.statusCode });
      return response;
    };
    return { request, answers };
  }

  function viemClient(key: string, options: { retryCount?: number } = {}) {
    const answers: { at: number; status: number; retryAfter: string | null }[] = [];
    const client = createClient({
      transport: http(sdkUrl(gw, "eth", key), {
        ...options,
        fetchOptions: { dispatcher } as unknown as RequestInit,
        onFetchResponse: (response) => {
          answers.push({
            at: performance.now(),
            status: response.status,
            retryAfter: response.headers.get("retry-after"),
          });
        },
      }),
    });
    return { client, answers };
  }

  const failure = (promise: Promise<unknown>): Promise<unknown> =>
    promise.then(
      () => undefined,
      (e: unknown) => e,
    );

  describe("ethers", () => {
    it("a 429 is sent again 12 times, Retry-After read as milliseconds (100 s asked, 100 ms waited)", async () => {
      const { request, answers } = ethersRequest(SLOW);
      const provider = new JsonRpcProvider(request, 31337, {
        staticNetwork: Network.from(31337),
        cacheTimeout: -1,
      });
      try {
        await provider.send("eth_blockNumber", []);
        const error = await failure(provider.send("eth_blockNumber", []));
        expect(error).toMatchObject({
          code: "SERVER_ERROR",
          message: expect.stringContaining("exceeded maximum retry limit"),
        });
        const refused = answers.slice(1);
        expect(refused.map((a) => a.status)).toEqual(Array(12).fill(429));
        const first = refused[0]?.at ?? 0;
        const last = refused[refused.length - 1]?.at ?? 0;
        // 11 waits of about 100 ms each, where it was told 100 s each
        expect(last - first).toBeLessThan(11 * 1_000);
      } finally {
        provider.destroy();
      }
    });

    it("a retryFunc that waits Retry-After's seconds makes it wait as told", async () => {
      const { request, answers } = ethersRequest(BRISK);
      request.retryFunc = async (_request, response) => {
        const seconds = Number(response.headers["retry-after"]);
        await new Promise((resolve) => setTimeout(resolve, (Number.isFinite(seconds) ? seconds : 1) * 1000));
        return true;
      };
      const provider = new JsonRpcProvider(request, 31337, {
        staticNetwork: Network.from(31337),
        cacheTimeout: -1,
      });
      try {
        await provider.send("eth_blockNumber", []);
        expect(await provider.send("eth_blockNumber", [])).toMatch(/^0x/);
        expect(answers.map((a) => a.status)).toEqual([200, 429, 200]);
        expect((answers[2]?.at ?? 0) - (answers[1]?.at ?? 0)).toBeGreaterThan(700);
      } finally {
        provider.destroy();
      }
    });

    it("402: SERVER_ERROR names the status; the code is in the answer's body", async () => {
      const { request } = ethersRequest(SPENT);
      const provider = new JsonRpcProvider(request, 31337, { staticNetwork: Network.from(31337) });
      try {
        const error = (await failure(provider.send("eth_blockNumber", []))) as {
          code: string;
          response: { statusCode: number; bodyJson: unknown };
        };
        expect(error.code).toBe("SERVER_ERROR");
        expect(error.response.statusCode).toBe(402);
        expect(error.response.bodyJson).toMatchObject({
          error: { code: -32046, data: { code: "QUOTA_EXCEEDED" } },
        });
      } finally {
        provider.destroy();
      }
    });

    it("without staticNetwork, a refused key's network detection is tried again every second", async () => {
      const { request, answers } = ethersRequest(SPENT);
      const provider = new JsonRpcProvider(request);
      try {
        // detection starts with the first call, which waits for it (and fails once destroyed)
        const call = failure(provider.getBlockNumber());
        await eventually(() => answers.length >= 2, 5_000, "a second detection");
        expect(answers.every((a) => a.status === 402)).toBe(true);
        provider.destroy();
        expect(await call).toBeDefined();
      } finally {
        provider.destroy();
      }
    });

    it("a WebSocketProvider given a socket with an error listener survives a refused upgrade", async () => {
      const errors: string[] = [];
      const url = `ws://eth.${DOMAIN}:${gw.port}/${SPENT}`;
      const provider = new WebSocketProvider(
        () => {
          const socket = new WebSocket(url);
          socket.on("error", (e) => errors.push(e.message));
          return socket as unknown as WebSocketLike;
        },
        31337,
        { staticNetwork: true },
      );
      try {
        await eventually(() => errors.length > 0, 5_000, "the socket's error");
        expect(errors).toEqual(["Unexpected server response: 402"]);
      } finally {
        await provider.destroy();
      }
    });
  });

  describe("viem", () => {
    it("a 429 is retried after Retry-After's seconds", async () => {
      const { client, answers } = viemClient(BRISK_VIEM);
      await client.request({ method: "eth_blockNumber" });
      expect(await client.request({ method: "eth_blockNumber" })).toMatch(/^0x/);
      expect(answers.map((a) => [a.status, a.retryAfter])).toEqual([
        [200, null],
        [429, "1"],
        [200, null],
      ]);
      expect((answers[2]?.at ?? 0) - (answers[1]?.at ?? 0)).toBeGreaterThan(700);
    });

    it("402 is not retried, and its code and data are read", async () => {
      const { client, answers } = viemClient(SPENT);
      const error = await failure(client.request({ method: "eth_blockNumber" }));
      expect(error).toBeInstanceOf(RpcRequestError);
      expect(error).toMatchObject({ code: -32046, data: { code: "QUOTA_EXCEEDED", remaining: 0 } });
      expect((error as RpcRequestError).details).toContain("quota");
      expect(answers.map((a) => a.status)).toEqual([402]);
    });

    it("in batch mode, a batch refused whole (402) is an HttpRequestError: the status alone, no code", async () => {
      const answers: number[] = [];
      const client = createClient({
        transport: http(sdkUrl(gw, "eth", SPENT), {
          batch: true,
          fetchOptions: { dispatcher } as unknown as RequestInit,
          onFetchResponse: (response) => {
            answers.push(response.status);
          },
        }),
      });
      const settled = await Promise.allSettled([
        client.request({ method: "eth_blockNumber" }),
        client.request({ method: "eth_chainId" }),
      ]);
      // viem utils/rpc/http.ts reads a non-2xx body's error only as one object (bare, or alone in an array, as
      // geth refuses a whole batch); the gateway answers each call by its id (docs/errors.md, "Shapes")
      for (const result of settled) {
        expect(result.status).toBe("rejected");
        const reason = (result as PromiseRejectedResult).reason as HttpRequestError;
        expect(reason).toBeInstanceOf(HttpRequestError);
        expect(reason).toMatchObject({ status: 402, details: "Payment Required" });
        expect((reason as unknown as { code?: unknown }).code).toBeUndefined();
      }
      expect(answers).toEqual([402]);
    });

    it("BLOCK_RANGE_TOO_LARGE (-32005, 413) is sent 1 + retryCount times; retryCount 0 sends it once", async () => {
      const wide = { method: "eth_getLogs", params: [{ fromBlock: "0x0", toBlock: "0xfffffff" }] } as const;
      const retried = viemClient(KEYS.all);
      const error = await failure(retried.client.request(wide as never));
      expect(error).toBeInstanceOf(LimitExceededRpcError);
      expect((error as LimitExceededRpcError).details).toContain("block range");
      expect(retried.answers.map((a) => a.status)).toEqual([413, 413, 413, 413]);
      const once = viemClient(KEYS.all, { retryCount: 0 });
      expect(await failure(once.client.request(wide as never))).toBeInstanceOf(LimitExceededRpcError);
      expect(once.answers.map((a) => a.status)).toEqual([413]);
    });

    it("a 403 refusal for the key (METHOD_NOT_ON_PLAN) is retried as a 403; METHOD_NOT_FOUND is not", async () => {
      const plan = viemClient(KEYS.all);
      const refused = await failure(
        plan.client.request({ method: "debug_traceTransaction", params: [`0x${"11".repeat(32)}`] } as never),
      );
      expect(refused).toMatchObject({ code: -32042 });
      expect(plan.answers.map((a) => a.status)).toEqual([403, 403, 403, 403]);
      const unknown = viemClient(KEYS.all);
      expect(
        await failure(unknown.client.request({ method: "eth_sign", params: [] } as never)),
      ).toMatchObject({
        code: -32601,
      });
      expect(unknown.answers.map((a) => a.status)).toEqual([403]);
    });
  });

  describe("polkadot.js", () => {
    it("HttpProvider shows a refusal's status alone: the body is not read", async () => {
      const provider = new HttpProvider(sdkUrl(gw, "dot", SPENT));
      const error = await failure(provider.send("chain_getHeader", []));
      expect(String((error as Error).message)).toMatch(/^\[402\]: Payment Required/);
      expect(String((error as Error).message)).not.toContain("QUOTA_EXCEEDED");
    });

    it("WsProvider opens again after a refused upgrade, whatever its status, until disconnect()", async () => {
      const errors: unknown[] = [];
      const provider = new WsProvider(`ws://dot.${DOMAIN}:${gw.port}/${SPENT}`, 50);
      provider.on("error", (e) => errors.push(e));
      try {
        await eventually(() => errors.length >= 3, 10_000, "three refused upgrades");
      } finally {
        await provider.disconnect().catch(() => undefined);
      }
      expect(new Set(errors.map((e) => (e as Error).message))).toEqual(
        new Set(["Unexpected server response: 402"]),
      );
    });
  });
});
