import type { Agent as HttpAgent } from "node:http";
import { Contract, FetchRequest, JsonRpcProvider, Network, Wallet } from "ethers";
import type { Agent } from "undici";
import {
  createClient,
  createPublicClient,
  createWalletClient,
  http,
  MethodNotFoundRpcError,
  parseEther,
  publicActions,
  RpcRequestError,
  type Transport,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { rpcMethods, sdkUrl, testHostDispatcher, testHostHttpAgent, upstreamSawSince } from "./resolve.js";

// viem and ethers, unmodified, against a real anvil through the gateway. Between the gateway and anvil sits
// a recording relay, so each test can check what the node really received.
//
// Host resolution: viem gets an undici Agent with a lookup through `fetchOptions.dispatcher`; ethers gets a
// node:http Agent with a lookup through `FetchRequest.createGetUrlFunc({ agent })`.

const DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const DEV_ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const RECIPIENT = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
/** An anvil dev account no test sends from or to, so its balance stays at genesis. */
const GENESIS_ADDRESS_UNTOUCHED = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc";
const GENESIS_BALANCE = 10_000n * 10n ** 18n;
/** A contract whose code answers every call with the word 42 (PUSH1 42, PUSH1 0, MSTORE, RETURN 32 bytes). */
const ANSWER_CONTRACT = "0x00000000000000000000000000000000000a4e42";
const ANSWER_CODE = "0x602a60005260206000f3";
const ANSWER_ABI = [
  { type: "function", name: "answer", stateMutability: "view", inputs: [], outputs: [{ type: "uint256" }] },
] as const;

describe("EVM SDKs through the gateway", () => {
  let anvil: Anvil;
  let relay: LoopbackNode;
  let gw: RunningGateway;
  let dispatcher: Agent;
  let agent: HttpAgent;

  beforeAll(async () => {
    anvil = await startAnvil();
    await anvil.rpc("anvil_setCode", [ANSWER_CONTRACT, ANSWER_CODE]);
    relay = await startLoopbackNode(async (seen) => {
      const response = await fetch(anvil.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: seen.body,
      });
      return { status: response.status, body: await response.text() };
    });
    // bsc shares the relay so that the only reason for the 403 below is the key.
    gw = await startGateway({ upstreams: { eth: [relay.url], bsc: [relay.url] } });
    dispatcher = testHostDispatcher();
    agent = testHostHttpAgent();
  });
  afterAll(async () => {
    agent?.destroy();
    await dispatcher?.close();
    await gw?.close();
    await relay?.close();
    await anvil?.stop();
  });

  function viemTransport(options: { batch?: boolean } = {}): Transport {
    return http(sdkUrl(gw, "eth"), {
      batch: options.batch ?? false,
      retryCount: 0,
      // Node's fetch takes undici's `dispatcher`; RequestInit types it with Node's bundled undici-types, whose
      // Dispatcher is not the undici package's, hence the cast.
      fetchOptions: { dispatcher } as unknown as RequestInit,
    });
  }

  function ethersProvider(label: string, key: string, chainId: number): JsonRpcProvider {
    const request = new FetchRequest(sdkUrl(gw, label, key));
    request.getUrlFunc = FetchRequest.createGetUrlFunc({ agent });
    // cacheTimeout -1: no 250 ms answer cache, so a balance read right after a transfer reaches the node
    return new JsonRpcProvider(request, chainId, { staticNetwork: Network.from(chainId), cacheTimeout: -1 });
  }

  describe("viem", () => {
    it("getBlockNumber, getBalance and getChainId", async () => {
      const from = relay.requests.length;
      const client = createPublicClient({ transport: viemTransport() });
      const [head, balance, chainId] = [
        await client.getBlockNumber({ cacheTime: 0 }),
        await client.getBalance({ address: DEV_ADDRESS }),
        await client.getChainId(),
      ];
      expect(head).toBe(BigInt(await anvil.rpc<string>("eth_blockNumber")));
      expect(balance).toBe(BigInt(await anvil.rpc<string>("eth_getBalance", [DEV_ADDRESS, "latest"])));
      expect(chainId).toBe(31337);
      const seen = upstreamSawSince(relay, from);
      expect(rpcMethods(seen)).toEqual(["eth_blockNumber", "eth_getBalance", "eth_chainId"]);
      // the key segment was stripped: the node was asked at its own root
      for (const request of seen) expect(request.url).toBe("/");
    });

    it("readContract (eth_call, no multicall)", async () => {
      const from = relay.requests.length;
      const client = createPublicClient({ transport: viemTransport() });
      const answer = await client.readContract({
        address: ANSWER_CONTRACT,
        abi: ANSWER_ABI,
        functionName: "answer",
      });
      expect(answer).toBe(42n);
      expect(rpcMethods(upstreamSawSince(relay, from))).toEqual(["eth_call"]);
    });

    it("sends a signed transaction and reads its receipt", async () => {
      const from = relay.requests.length;
      const wallet = createWalletClient({
        account: privateKeyToAccount(DEV_KEY),
        chain: foundry,
        transport: viemTransport(),
      });
      const client = createPublicClient({ chain: foundry, transport: viemTransport(), pollingInterval: 50 });
      const before = await client.getBalance({ address: RECIPIENT });
      const hash = await wallet.sendTransaction({ to: RECIPIENT, value: parseEther("1.5") });
      const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      expect(receipt.status).toBe("success");
      expect(receipt.transactionHash).toBe(hash);
      expect(receipt.from.toLowerCase()).toBe(DEV_ADDRESS.toLowerCase());
      expect(receipt.to?.toLowerCase()).toBe(RECIPIENT.toLowerCase());
      expect(await client.getBalance({ address: RECIPIENT })).toBe(before + parseEther("1.5"));
      const methods = rpcMethods(upstreamSawSince(relay, from));
      expect(methods).toContain("eth_sendRawTransaction");
      expect(methods).toContain("eth_getTransactionReceipt");
      // signed locally: the node never sees a signing request
      expect(methods).not.toContain("eth_sendTransaction");
    });

    it("batches calls into one JSON-RPC batch with http(url, { batch: true })", async () => {
      const from = relay.requests.length;
      const client = createPublicClient({ transport: viemTransport({ batch: true }) });
      const [head, balance, nonce] = await Promise.all([
        client.getBlockNumber({ cacheTime: 0 }),
        client.getBalance({ address: GENESIS_ADDRESS_UNTOUCHED }),
        client.getTransactionCount({ address: DEV_ADDRESS }),
      ]);
      expect(head).toBe(BigInt(await anvil.rpc<string>("eth_blockNumber")));
      expect(balance).toBe(GENESIS_BALANCE);
      expect(nonce).toBe(Number(await anvil.rpc<string>("eth_getTransactionCount", [DEV_ADDRESS, "latest"])));
      const seen = upstreamSawSince(relay, from);
      expect(seen).toHaveLength(1);
      expect(JSON.parse(seen[0]?.body ?? "null")).toHaveLength(3);
      expect(rpcMethods(seen).sort()).toEqual([
        "eth_blockNumber",
        "eth_getBalance",
        "eth_getTransactionCount",
      ]);
    });

    it("a method the registry denies raises MethodNotFoundRpcError (-32601); the node sees nothing", async () => {
      const from = relay.requests.length;
      // a bare client: its `request` is not limited to the public-action methods' types
      const client = createClient({ transport: viemTransport() });
      const error = await client.request({ method: "eth_sign", params: [DEV_ADDRESS, "0xdeadbeef"] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(MethodNotFoundRpcError);
      expect((error as MethodNotFoundRpcError).code).toBe(-32601);
      // under it, the gateway's answer as viem read it: HTTP 403 and the error's data member
      const cause = (error as MethodNotFoundRpcError).cause as RpcRequestError;
      expect(cause).toBeInstanceOf(RpcRequestError);
      expect(cause.status).toBe(403);
      expect(cause.data).toEqual({
        code: "METHOD_NOT_FOUND",
        method: "eth_sign",
        requestId: expect.any(String),
      });
      expect(relay.requests.length).toBe(from);
    });

    it("in a batch, only the denied call fails; the others are answered", async () => {
      const from = relay.requests.length;
      const client = createClient({ transport: viemTransport({ batch: true }) }).extend(publicActions);
      const [head, signed] = await Promise.allSettled([
        client.getBlockNumber({ cacheTime: 0 }),
        client.request({ method: "eth_sign", params: [DEV_ADDRESS, "0xdeadbeef"] }),
      ]);
      expect(head.status).toBe("fulfilled");
      expect((head as PromiseFulfilledResult<bigint>).value).toBe(
        BigInt(await anvil.rpc<string>("eth_blockNumber")),
      );
      expect(signed.status).toBe("rejected");
      expect((signed as PromiseRejectedResult).reason).toBeInstanceOf(MethodNotFoundRpcError);
      const seen = upstreamSawSince(relay, from);
      expect(rpcMethods(seen)).toEqual(["eth_blockNumber"]);
    });
  });

  describe("ethers", () => {
    it("getBlockNumber, getBalance and getNetwork", async () => {
      const from = relay.requests.length;
      const provider = ethersProvider("eth", KEYS.all, 31337);
      try {
        const head = await provider.getBlockNumber();
        const balance = await provider.getBalance(DEV_ADDRESS);
        const network = await provider.getNetwork();
        expect(head).toBe(Number(await anvil.rpc<string>("eth_blockNumber")));
        expect(balance).toBe(BigInt(await anvil.rpc<string>("eth_getBalance", [DEV_ADDRESS, "latest"])));
        expect(network.chainId).toBe(31337n);
        expect(await provider.send("eth_chainId", [])).toBe("0x7a69");
        const methods = rpcMethods(upstreamSawSince(relay, from));
        expect(methods).toEqual(expect.arrayContaining(["eth_blockNumber", "eth_getBalance", "eth_chainId"]));
      } finally {
        provider.destroy();
      }
    });

    it("Contract call (eth_call)", async () => {
      const from = relay.requests.length;
      const provider = ethersProvider("eth", KEYS.all, 31337);
      try {
        const contract = new Contract(
          ANSWER_CONTRACT,
          ["function answer() view returns (uint256)"],
          provider,
        );
        expect(await contract.getFunction("answer").staticCall()).toBe(42n);
        expect(rpcMethods(upstreamSawSince(relay, from))).toEqual(["eth_call"]);
      } finally {
        provider.destroy();
      }
    });

    it("sends a signed transaction and reads its receipt", async () => {
      const from = relay.requests.length;
      const provider = ethersProvider("eth", KEYS.all, 31337);
      try {
        const wallet = new Wallet(DEV_KEY, provider);
        const before = await provider.getBalance(RECIPIENT);
        const tx = await wallet.sendTransaction({ to: RECIPIENT, value: 2n * 10n ** 18n });
        const receipt = await tx.wait();
        expect(receipt?.status).toBe(1);
        expect(receipt?.hash).toBe(tx.hash);
        expect(receipt?.from).toBe(DEV_ADDRESS);
        expect(receipt?.to).toBe(RECIPIENT);
        expect(await provider.getBalance(RECIPIENT)).toBe(before + 2n * 10n ** 18n);
        const methods = rpcMethods(upstreamSawSince(relay, from));
        expect(methods).toContain("eth_sendRawTransaction");
        expect(methods).toContain("eth_getTransactionReceipt");
      } finally {
        provider.destroy();
      }
    });

    it("JsonRpcProvider batches concurrent calls into one JSON-RPC batch", async () => {
      const provider = ethersProvider("eth", KEYS.all, 31337);
      try {
        await provider.getBlockNumber();
        const from = relay.requests.length;
        const [balance, nonce, code] = await Promise.all([
          provider.getBalance(GENESIS_ADDRESS_UNTOUCHED),
          provider.getTransactionCount(DEV_ADDRESS),
          provider.getCode(DEV_ADDRESS),
        ]);
        expect(balance).toBe(GENESIS_BALANCE);
        expect(nonce).toBe(
          Number(await anvil.rpc<string>("eth_getTransactionCount", [DEV_ADDRESS, "latest"])),
        );
        expect(code).toBe("0x");
        const seen = upstreamSawSince(relay, from);
        expect(seen).toHaveLength(1);
        expect(JSON.parse(seen[0]?.body ?? "null")).toHaveLength(3);
        expect(rpcMethods(seen).sort()).toEqual(["eth_getBalance", "eth_getCode", "eth_getTransactionCount"]);
      } finally {
        provider.destroy();
      }
    });

    it("a key for another network surfaces as HTTP 403 (NETWORK_FORBIDDEN); the node sees nothing", async () => {
      const from = relay.requests.length;
      const provider = ethersProvider("bsc", KEYS.ethOnly, 56);
      try {
        const error = await provider.getBlockNumber().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toMatchObject({ code: "SERVER_ERROR" });
        const response = (error as { response: { statusCode: number; bodyJson: unknown } }).response;
        expect(response.statusCode).toBe(403);
        expect(response.bodyJson).toMatchObject({
          error: { code: -32041, data: { code: "NETWORK_FORBIDDEN" } },
        });
        expect(relay.requests.length).toBe(from);
      } finally {
        provider.destroy();
      }
    });
  });
});
