import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import metadata, { rpc, version } from "@polkadot/types-support/metadata/static-polkadot";
import { compactAddLength, hexToU8a, u8aToHex } from "@polkadot/util";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { parseJsonRpcBody } from "../../src/jsonrpc/scan.js";
import { eventually } from "./eventually.js";

// A loopback upstream node over WebSocket: it answers JSON-RPC calls and batches like a node (the id echoed
// as the caller's own token, so a large integer keeps its digits), keeps subscriptions per connection and
// pushes their notifications, and records every connection and every message, so a test can see exactly
// what the gateway sent and whether the gateway closed the upstream socket of a client that left. Its port
// answers HTTP POSTs too, as a Substrate node's one RPC server (jsonrpsee) and geth's shared HTTP/WS port
// do: the same calls, and a subscription refused as its software refuses one over HTTP.

/** One call as the node received it. */
export interface WsCall {
  readonly method: string;
  readonly params: unknown;
  /** The id's source text as received, or undefined for a notification. */
  readonly id: string | undefined;
  readonly connection: WsNodeConnection;
}

/** A result value, or a function of the call giving one (a promise holds the answer back until it settles). */
export type WsResult = unknown | ((params: unknown, call: WsCall) => unknown);

/** A JSON-RPC error a result function throws to answer with an error object instead of a result. */
export class WsRpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export interface SubscriptionSpec {
  /** The method name of the notifications (`eth_subscription`, `chain_newHead`). */
  readonly notification: string;
  /** The method that ends it (`eth_unsubscribe`, `chain_unsubscribeNewHeads`). */
  readonly unsubscribe: string;
  /** Called just after the subscribe call was answered, e.g. to start a feed. */
  readonly onSubscribe?: (subscription: ActiveSubscription) => void;
}

export interface ActiveSubscription {
  readonly id: string;
  readonly method: string;
  readonly params: unknown;
  readonly connection: WsNodeConnection;
  /** True until unsubscribed or the connection closed. */
  readonly active: boolean;
  /** Pushes `{"method": <notification>, "params": {"subscription": id, "result": result}}`. */
  notify(result: unknown): void;
  /** Runs when the subscription ends (unsubscribe or close), e.g. to stop a feed. */
  onEnd(cleanup: () => void): void;
  /** Ends it on the node's side, as a node does at a watch's final status: an unsubscribe then answers false. */
  end(): void;
}

export interface WsNodeConnection {
  /** 0 for the first connection the node accepted, then 1, 2, ... */
  readonly index: number;
  readonly socket: WebSocket;
  /** The request target of the upgrade, exactly as received. */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** Every message received on this connection, as text. */
  readonly messages: string[];
  readonly subscriptions: ReadonlyMap<string, ActiveSubscription>;
  readonly isOpen: boolean;
  /** The close code the node saw, once closed. */
  readonly closeCode: number | undefined;
  /** Settles with the close code when the connection is closed. */
  readonly closed: Promise<number>;
  /** Sends raw text, as a node pushing something on its own. */
  send(text: string): void;
  /** The method names of the calls received on this connection, in order (batches flattened). */
  methods(): string[];
}

export interface LoopbackWsNode {
  /** `http://127.0.0.1:<port>`: the gateway's upstream URL (it derives `ws://` from it). */
  readonly url: string;
  readonly wsUrl: string;
  readonly port: number;
  /** Every connection ever accepted, in order. */
  readonly connections: readonly WsNodeConnection[];
  /** Connections not closed yet. */
  openConnections(): number;
  /** The connection accepted last (a client's own once its handshake through the gateway completed). */
  latest(): WsNodeConnection;
  /** Every method name received on any connection, in order. */
  methods(): string[];
  /** Every method name received over HTTP, in order (batches flattened). */
  readonly httpMethods: readonly string[];
  close(): Promise<void>;
}

export interface LoopbackWsNodeOptions {
  readonly results?: Readonly<Record<string, WsResult>>;
  /** Subscribe methods the node knows. */
  readonly subscriptions?: Readonly<Record<string, SubscriptionSpec>>;
  /** How a new subscription id looks; hex quantities (`0x1a`) unless given. */
  readonly subscriptionId?: (n: number) => string;
  /** The error its software answers a method it does not know with; geth's unless given. */
  readonly unknownMethod?: (method: string) => WsRpcError;
  /** The error its software answers a subscription over HTTP with; geth's unless given. */
  readonly subscriptionOverHttp?: () => WsRpcError;
}

/** go-ethereum rpc/errors.go methodNotFoundError: the method named in the message. */
const gethUnknownMethod = (method: string): WsRpcError =>
  new WsRpcError(-32601, `the method ${method} does not exist/is not available`);

/** go-ethereum rpc/errors.go notificationsUnsupportedError, a subscription over HTTP. */
const gethSubscriptionOverHttp = (): WsRpcError => new WsRpcError(-32601, "notifications not supported");

export async function startLoopbackWsNode(options: LoopbackWsNodeOptions = {}): Promise<LoopbackWsNode> {
  const results = options.results ?? {};
  const specs = options.subscriptions ?? {};
  const unsubscribers = new Set(Object.values(specs).map((s) => s.unsubscribe));
  const makeId = options.subscriptionId ?? ((n: number) => `0x${(0x1000 + n).toString(16)}`);
  let nextSubscription = 0;
  const connections: Connection[] = [];

  const httpMethods: string[] = [];
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      answerHttp(Buffer.concat(chunks).toString("utf8")).then(
        (body) => {
          res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
          res.end(body);
        },
        () => res.destroy(),
      );
    });
  });
  const server = new WebSocketServer({ server: http, perMessageDeflate: false });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;

  async function answer(call: WsCall, refusal?: WsRpcError): Promise<string | undefined> {
    const id = call.id ?? "null";
    try {
      if (refusal !== undefined) throw refusal;
      let value: unknown;
      const spec = specs[call.method];
      if (spec !== undefined) {
        value = subscribe(call, spec);
      } else if (unsubscribers.has(call.method) && !Object.hasOwn(results, call.method)) {
        value = unsubscribe(call);
      } else if (Object.hasOwn(results, call.method)) {
        const result = results[call.method];
        value = await (typeof result === "function"
          ? (result as (p: unknown, c: WsCall) => unknown)(call.params, call)
          : result);
      } else {
        throw (options.unknownMethod ?? gethUnknownMethod)(call.method);
      }
      if (call.id === undefined) return undefined;
      return `{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(value ?? null)}}`;
    } catch (error) {
      if (call.id === undefined) return undefined;
      const e = error instanceof WsRpcError ? error : new WsRpcError(-32603, String(error));
      const body = { code: e.code, message: e.message, ...(e.data === undefined ? {} : { data: e.data }) };
      return `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(body)}}`;
    }
  }

  function subscribe(call: WsCall, spec: SubscriptionSpec): string {
    const connection = call.connection as Connection;
    const id = makeId(nextSubscription++);
    const cleanups: (() => void)[] = [];
    const subscription = {
      id,
      method: call.method,
      params: call.params,
      connection,
      active: true,
      notify(result: unknown) {
        if (!subscription.active || !connection.isOpen) return;
        connection.send(
          `{"jsonrpc":"2.0","method":${JSON.stringify(spec.notification)},"params":{"subscription":${JSON.stringify(id)},"result":${JSON.stringify(result)}}}`,
        );
      },
      onEnd(cleanup: () => void) {
        cleanups.push(cleanup);
      },
      end() {
        if (!subscription.active) return;
        subscription.active = false;
        connection.subscriptions.delete(id);
        for (const cleanup of cleanups) cleanup();
      },
    };
    connection.subscriptions.set(id, subscription);
    // after the answer is on the wire
    if (spec.onSubscribe !== undefined) {
      const start = spec.onSubscribe;
      setImmediate(() => {
        if (subscription.active) start(subscription);
      });
    }
    return id;
  }

  function unsubscribe(call: WsCall): boolean {
    const connection = call.connection as Connection;
    const [id] = Array.isArray(call.params) ? call.params : [];
    const subscription = typeof id === "string" ? connection.subscriptions.get(id) : undefined;
    if (subscription === undefined) return false;
    // jsonrpsee, polkadot-sdk's server (core/src/server/rpc_module.rs register_subscription), keeps each
    // subscription method's subscriptions in its own map, which its aliases share (register_alias clones
    // its callbacks): an unsubscribe of another method answers false, and the subscription goes on
    const own = specs[subscription.method]?.notification;
    const cancels = Object.values(specs).some((s) => s.unsubscribe === call.method && s.notification === own);
    if (!cancels) return false;
    subscription.end();
    return true;
  }

  /** The calls of a message, recorded; undefined for text that is no JSON (the node's parse error). */
  function callsOf(
    text: string,
    connection: Connection | undefined,
  ): { calls: WsCall[]; batch: boolean } | undefined {
    let parsed: ReturnType<typeof parseJsonRpcBody>;
    try {
      parsed = parseJsonRpcBody(text, 1000);
    } catch {
      return undefined;
    }
    const calls = parsed.calls.map((raw): WsCall => {
      const value = raw.value as { method?: unknown; params?: unknown };
      return {
        method: typeof value.method === "string" ? value.method : "",
        params: value.params,
        id: raw.members.get("id"),
        // over HTTP no connection holds a subscription: `answer` never reaches one with this
        connection: connection as Connection,
      };
    });
    (connection?.calls ?? httpMethods).push(...calls.map((c) => c.method));
    return { calls, batch: parsed.batch };
  }

  const PARSE_ERROR = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}';

  async function onMessage(connection: Connection, data: RawData): Promise<void> {
    const text = rawText(data);
    connection.messages.push(text);
    const message = callsOf(text, connection);
    if (message === undefined) return connection.send(PARSE_ERROR);
    const answers = await Promise.all(message.calls.map((call) => answer(call)));
    const sent = answers.filter((a): a is string => a !== undefined);
    if (sent.length === 0) return;
    connection.send(message.batch ? `[${sent.join(",")}]` : (sent[0] as string));
  }

  /** An HTTP POST's answer: the same calls, but a subscription or its end refused as over HTTP. */
  async function answerHttp(text: string): Promise<string> {
    const message = callsOf(text, undefined);
    if (message === undefined) return PARSE_ERROR;
    const refuse = options.subscriptionOverHttp ?? gethSubscriptionOverHttp;
    const answers = await Promise.all(
      message.calls.map((call) =>
        specs[call.method] !== undefined || unsubscribers.has(call.method)
          ? answer(call, refuse())
          : answer(call),
      ),
    );
    const sent = answers.filter((a): a is string => a !== undefined);
    return message.batch ? `[${sent.join(",")}]` : (sent[0] ?? "");
  }

  server.on("connection", (socket, req) => {
    let settle: (code: number) => void = () => {};
    const connection: Connection = {
      index: connections.length,
      socket,
      url: req.url ?? "",
      headers: req.headers,
      messages: [],
      calls: [],
      subscriptions: new Map(),
      isOpen: true,
      closeCode: undefined,
      closed: new Promise<number>((resolve) => {
        settle = resolve;
      }),
      send(text) {
        if (connection.isOpen && socket.readyState === socket.OPEN) socket.send(text);
      },
      methods: () => [...connection.calls],
    };
    connections.push(connection);
    socket.on("message", (data) => {
      onMessage(connection, data).catch(() => socket.terminate());
    });
    socket.on("error", () => {});
    socket.on("close", (code) => {
      connection.isOpen = false;
      connection.closeCode = code;
      for (const subscription of [...connection.subscriptions.values()]) subscription.end();
      settle(code);
    });
  });

  return {
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    port,
    connections,
    openConnections: () => connections.filter((c) => c.isOpen).length,
    latest() {
      const last = connections.at(-1);
      if (last === undefined) throw new Error("the loopback node has accepted no connection");
      return last;
    },
    methods: () => connections.flatMap((c) => c.calls),
    httpMethods,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of connections) c.socket.terminate();
        server.close();
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

interface Subscription extends ActiveSubscription {
  active: boolean;
}

interface Connection extends WsNodeConnection {
  readonly calls: string[];
  readonly subscriptions: Map<string, Subscription>;
  isOpen: boolean;
  closeCode: number | undefined;
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}

/** `eventually` with the defaults these suites share: a check of the node's own state, within 3 s. */
export async function waitUntil(check: () => boolean, timeoutMs = 3_000, what = "condition"): Promise<void> {
  await eventually(check, timeoutMs, what);
}

// ---- Substrate mode --------------------------------------------------------------------------------------

export const SUBSTRATE_GENESIS = "0x91b171bb158e2d3848fa23a9f1c25182fb8e20313b2c1eb49219da7a70ce90c3";
export const SUBSTRATE_HEAD_HASH = "0x4d1e2f3c2a1b0e9d8c7b6a5948372615f4e3d2c1b0a9f8e7d6c5b4a392817061";
/** The block number of the head the node reports; pushed new heads count up from the next one. */
export const SUBSTRATE_HEAD_NUMBER = 0x1a2b3c4;

/** A Substrate header as the JSON-RPC API returns it (number as a hex quantity). */
export function substrateHeader(number: number): {
  parentHash: string;
  number: string;
  stateRoot: string;
  extrinsicsRoot: string;
  digest: { logs: string[] };
} {
  const fill = (byte: number) =>
    `0x${(number >>> 0).toString(16).padStart(8, "0")}${byte.toString(16).padStart(2, "0").repeat(28)}`;
  return {
    parentHash: fill(0xa1),
    number: `0x${number.toString(16)}`,
    stateRoot: fill(0xb2),
    extrinsicsRoot: fill(0xc3),
    digest: { logs: [] },
  };
}

/** Vec<u32> [14]: the runtime offers metadata v14. */
const METADATA_VERSIONS = "0x040e000000";

function substrateStateCall(params: unknown): unknown {
  const [method] = params as [string, string];
  if (method === "Metadata_metadata_versions") return METADATA_VERSIONS;
  // Option<OpaqueMetadata>: Some, then the metadata bytes with their compact length
  if (method === "Metadata_metadata_at_version")
    return `0x01${u8aToHex(compactAddLength(hexToU8a(metadata)), -1, false)}`;
  throw new WsRpcError(-32000, `unexpected state_call ${method}`);
}

export interface SubstrateOptions {
  /** How often a new-heads subscription gets a header pushed; 50 ms unless given. */
  readonly newHeadEveryMs?: number;
  /**
   * A chain the node follows, shared with other nodes: new heads are pushed as the chain makes them (the
   * current one first, as a Substrate node does), and chain_getHeader finds its headers by hash.
   */
  readonly chain?: SharedSubstrateChain;
}

/** One simulated Substrate chain that several loopback nodes follow: block n's parent is block n - 1. */
export class SharedSubstrateChain {
  head = SUBSTRATE_HEAD_NUMBER;
  readonly #followers = new Set<(number: number) => void>();

  static hash(number: number): string {
    return `0x${number.toString(16).padStart(8, "0")}${"e7".repeat(28)}`;
  }

  static header(number: number): ReturnType<typeof substrateHeader> {
    // the genesis header's parentHash is all zeros
    const parentHash = number === 0 ? `0x${"00".repeat(32)}` : SharedSubstrateChain.hash(number - 1);
    return { ...substrateHeader(number), parentHash };
  }

  /** The header whose hash is `hash`, or null for a hash of no block up to the head. */
  headerByHash(hash: unknown): ReturnType<typeof substrateHeader> | null {
    if (typeof hash !== "string" || !hash.endsWith("e7".repeat(28))) return null;
    const number = Number.parseInt(hash.slice(2, 10), 16);
    return number <= this.head ? SharedSubstrateChain.header(number) : null;
  }

  /** Makes the next block: every follower hears of it. */
  produce(): void {
    this.head++;
    for (const follow of this.#followers) follow(this.head);
  }

  follow(listener: (number: number) => void): () => void {
    this.#followers.add(listener);
    return () => this.#followers.delete(listener);
  }
}

/**
 * A Polkadot node's answers: what `WsProvider` and `ApiPromise.create` ask (the runtime version, RPC
 * method list and v14 metadata are the real ones polkadot.js ships in @polkadot/types-support), and
 * `chain_subscribeNewHeads` / `chain_subscribeFinalizedHeads` feeds that push a header every
 * `newHeadEveryMs` until unsubscribed; `state_subscribeRuntimeVersion` pushes the version once. Subscription
 * ids are 16-character strings like a Substrate node's.
 */
export function substrateNode(options: SubstrateOptions = {}): LoopbackWsNodeOptions {
  const every = options.newHeadEveryMs ?? 50;
  const { chain } = options;
  /** GRANDPA finalizes a block or two behind the best one: here always 2. */
  const FINALITY_LAG = 2;
  // `lag` 0 feeds best headers (chain_subscribeNewHeads), FINALITY_LAG the finalized ones: polkadot-sdk
  // substrate/client/rpc/src/chain/chain_full.rs subscribe_finalized_heads follows the client's
  // finality notifications, not its import ones, so its headers are the finalized head's.
  const feed = (lag: number) => (subscription: ActiveSubscription) => {
    if (chain !== undefined) {
      subscription.notify(SharedSubstrateChain.header(chain.head - lag));
      subscription.onEnd(chain.follow((n) => subscription.notify(SharedSubstrateChain.header(n - lag))));
      return;
    }
    let number = SUBSTRATE_HEAD_NUMBER;
    // the finalized feed starts with the finalized head, as chain_getFinalizedHead names it
    if (lag > 0) subscription.notify(substrateHeader(number - lag));
    const timer = setInterval(() => subscription.notify(substrateHeader(++number - lag)), every);
    subscription.onEnd(() => clearInterval(timer));
  };
  const headFeed = feed(0);
  // Without a chain the head stays at SUBSTRATE_HEAD_NUMBER (SUBSTRATE_HEAD_HASH), block 0 is
  // SUBSTRATE_GENESIS, any other block below the head has a hash of its own.
  const head = () => chain?.head ?? SUBSTRATE_HEAD_NUMBER;
  const hashOf = (n: number): string =>
    chain !== undefined
      ? SharedSubstrateChain.hash(n)
      : n === 0
        ? SUBSTRATE_GENESIS
        : n === SUBSTRATE_HEAD_NUMBER
          ? SUBSTRATE_HEAD_HASH
          : SharedSubstrateChain.hash(n);
  const finalizedHash = () => hashOf(head() - FINALITY_LAG);
  return {
    // jsonrpsee (Substrate's server) answers an unknown method with the spec's bare error, no method name
    // (jsonrpsee types/src/error.rs ErrorCode::MethodNotFound, as node-software.ts's substrate entry)
    unknownMethod: () => new WsRpcError(-32601, "Method not found"),
    // jsonrpsee's server: a subscription (or its end) over HTTP is the spec's bare internal error
    subscriptionOverHttp: () => new WsRpcError(-32603, "Internal error"),
    results: {
      rpc_methods: rpc,
      // polkadot-sdk substrate/client/rpc/src/chain/mod.rs block_hash: no number (or null) is the best
      // block's hash; a number (JSON or hex string, NumberOrHex) is client.hash(n), null above the best
      // block; a list gets a list.
      chain_getBlockHash: (params: unknown) => {
        const at = Array.isArray(params) ? params[0] : undefined;
        const one = (n: unknown): string | null => {
          if (n === undefined || n === null) return hashOf(head());
          const number = typeof n === "string" && /^0x[0-9a-fA-F]+$/.test(n) ? Number.parseInt(n, 16) : n;
          if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 0)
            throw new WsRpcError(-32602, "Invalid params");
          return number > head() ? null : hashOf(number);
        };
        return Array.isArray(at) ? at.map(one) : one(at);
      },
      chain_getHeader:
        chain === undefined
          ? substrateHeader(SUBSTRATE_HEAD_NUMBER)
          : (params: unknown) =>
              Array.isArray(params) && params.length > 0
                ? chain.headerByHash(params[0])
                : SharedSubstrateChain.header(chain.head),
      // GRANDPA finalizes a block or two behind the best one
      chain_getFinalizedHead: finalizedHash,
      chain_getFinalisedHead: finalizedHash,
      state_getRuntimeVersion: version,
      chain_getRuntimeVersion: version,
      state_getMetadata: metadata,
      state_call: substrateStateCall,
      system_chain: "Polkadot",
      system_name: "Parity Polkadot",
      system_version: "1.17.0-loopback",
      system_chainType: "Live",
      system_properties: { ss58Format: 0, tokenDecimals: 10, tokenSymbol: "DOT" },
      system_health: { peers: 42, isSyncing: false, shouldHavePeers: true },
    },
    subscriptions: {
      chain_subscribeNewHeads: {
        notification: "chain_newHead",
        unsubscribe: "chain_unsubscribeNewHeads",
        onSubscribe: headFeed,
      },
      // the legacy name polkadot.js picks when rpc_methods lists it, as a Polkadot node's does
      chain_subscribeNewHead: {
        notification: "chain_newHead",
        unsubscribe: "chain_unsubscribeNewHead",
        onSubscribe: headFeed,
      },
      chain_subscribeFinalizedHeads: {
        notification: "chain_finalizedHead",
        unsubscribe: "chain_unsubscribeFinalizedHeads",
        onSubscribe: feed(FINALITY_LAG),
      },
      state_subscribeRuntimeVersion: {
        notification: "state_runtimeVersion",
        unsubscribe: "state_unsubscribeRuntimeVersion",
        onSubscribe: (subscription) => subscription.notify(version),
      },
      // the new JSON-RPC spec's chainHead (polkadot-sdk substrate/client/rpc-spec-v2/src/chain_head): a
      // follow subscription whose first event names the finalized block, which the node then pins for it
      chainHead_v1_follow: {
        notification: "chainHead_v1_followEvent",
        unsubscribe: "chainHead_v1_unfollow",
        onSubscribe: (subscription) =>
          subscription.notify({ event: "initialized", finalizedBlockHashes: [finalizedHash()] }),
      },
    },
    subscriptionId: (n) => `Lb${n.toString(36).padStart(14, "0")}`,
  };
}

/** An EVM node's few answers for relay tests, and `eth_subscribe` (notifications pushed by the test). */
export function evmNode(extra: Readonly<Record<string, WsResult>> = {}): LoopbackWsNodeOptions {
  return {
    results: {
      eth_chainId: "0x1",
      eth_blockNumber: "0x10",
      net_version: "1",
      net_listening: true,
      web3_clientVersion: "loopback/v1.0.0",
      ...extra,
    },
    subscriptions: { eth_subscribe: { notification: "eth_subscription", unsubscribe: "eth_unsubscribe" } },
  };
}
