import dns from "node:dns";
import http from "node:http";
import type { LookupFunction } from "node:net";
import { Agent, type Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from "undici";
import { expect } from "vitest";
import { DOMAIN, KEYS, type RunningGateway } from "../support/gateway.js";
import type { LoopbackNode, SeenRequest } from "../support/loopback-node.js";

// How the SDK tests reach `http://<label>.gw.test:<port>/<KEY>` without system DNS: one lookup function that
// maps `*.gw.test` to 127.0.0.1 (and defers to dns.lookup for anything else), handed to whichever connection
// layer the SDK uses: an undici Agent for global fetch (or viem's fetchOptions), a node:http Agent for SDKs
// built on node:http or axios.

function isTestHost(hostname: string): boolean {
  return hostname === DOMAIN || hostname.endsWith(`.${DOMAIN}`);
}

/** A net/dns-style lookup: `*.gw.test` is 127.0.0.1, anything else goes to dns.lookup. */
export const testHostLookup: LookupFunction = (hostname, options, callback) => {
  if (!isTestHost(hostname)) {
    dns.lookup(hostname, options, callback);
    return;
  }
  // net.connect asks for every address (autoSelectFamily) on Node 20; older callers want one.
  if (options.all) callback(null, [{ address: "127.0.0.1", family: 4 }]);
  else callback(null, "127.0.0.1", 4);
};

/** An undici dispatcher that resolves `*.gw.test` to loopback; for `fetch(url, { dispatcher })`. */
export function testHostDispatcher(): Agent {
  return new Agent({ connect: { lookup: testHostLookup } });
}

/**
 * Node 20's own fetch (its bundled undici 6) appends its computed Content-Length to one the caller set, and
 * hands the dispatcher `"7, 7"`; Node's own dispatcher reads that with parseInt, the undici 7 package's rejects
 * it ("invalid content-length header"). Loading the undici package (test/support/gateway.ts does) already puts
 * an undici 7 Agent in the global slot, so an SDK that sets Content-Length itself (polkadot.js HttpProvider)
 * would fail before sending anything. The global dispatcher here reads a repeated value as Node's does.
 */
const firstContentLength: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) => {
  const { headers } = options;
  if (headers === null || typeof headers !== "object" || Array.isArray(headers) || Symbol.iterator in headers)
    return dispatch(options, handler);
  const fixed: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    fixed[name] =
      name.toLowerCase() === "content-length" && typeof value === "string"
        ? (value.split(",")[0] ?? "").trim()
        : value;
  }
  return dispatch({ ...options, headers: fixed }, handler);
};

/** A node:http agent that resolves `*.gw.test` to loopback; for SDKs built on node:http or axios. */
export function testHostHttpAgent(): http.Agent {
  return new http.Agent({ lookup: testHostLookup });
}

/**
 * Installs a resolving dispatcher as undici's global dispatcher, which Node's own global fetch honours, for
 * SDKs that call global fetch with no hook of their own. Returns the function that puts the previous one back.
 */
export function useTestHostsForGlobalFetch(): () => Promise<void> {
  const previous: Dispatcher = getGlobalDispatcher();
  const agent = testHostDispatcher();
  setGlobalDispatcher(agent.compose(firstContentLength));
  return async () => {
    setGlobalDispatcher(previous);
    await agent.close();
  };
}

/** The URL an SDK is given: the gateway's public form, `http://<label>.gw.test:<port>/<key>`. */
export function sdkUrl(gw: RunningGateway, label: string, key: string = KEYS.all): string {
  return `http://${label}.${DOMAIN}:${gw.port}/${key}`;
}

const ALL_KEYS: readonly string[] = Object.values(KEYS);

/** Fails when any test key appears in what the upstream received: path, query, header names and values, body. */
export function expectNoKeyIn(requests: readonly SeenRequest[]): void {
  for (const seen of requests) {
    for (const key of ALL_KEYS) {
      expect(seen.url).not.toContain(key);
      for (const raw of seen.rawHeaders) expect(raw).not.toContain(key);
      expect(seen.body).not.toContain(key);
    }
  }
}

/**
 * What the upstream saw since `from` (an index into `node.requests`): asserts it saw at least one request and
 * that none of them carries a key, then returns them.
 */
export function upstreamSawSince(node: LoopbackNode, from: number): SeenRequest[] {
  const seen = node.requests.slice(from);
  expect(seen.length).toBeGreaterThan(0);
  expectNoKeyIn(seen);
  return seen;
}

/** The JSON-RPC method names in the upstream's requests, batches flattened. */
export function rpcMethods(requests: readonly SeenRequest[]): string[] {
  return requests.flatMap((seen) => {
    const parsed = JSON.parse(seen.body) as unknown;
    const calls = (Array.isArray(parsed) ? parsed : [parsed]) as { method?: unknown }[];
    return calls.map((call) => String(call.method));
  });
}
