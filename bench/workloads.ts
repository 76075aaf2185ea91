import type { Workload } from "./load.js";

const rpc = (method: string, id = 1) => JSON.stringify({ jsonrpc: "2.0", id, method, params: [] });
const SMALL: Omit<Workload, "name" | "connections"> = {
  method: "POST",
  path: "/",
  body: rpc("eth_blockNumber"),
  label: "eth",
};

/** The small JSON-RPC call at 50 connections: the quick run's, and the one scaling and routing run on. */
export const SMALL_CALL_50: Workload = { name: "eth_blockNumber, 50 conns", connections: 50, ...SMALL };

/**
 * A call the answer cache keeps for good (registry `reads.cache.always`): after the first, every one is a
 * hit. The cache scenario's hit path.
 */
export const CACHE_HIT_50: Workload = {
  name: "eth_chainId, 50 conns",
  connections: 50,
  ...SMALL,
  body: rpc("eth_chainId"),
};

// The 1 MB workload runs first: a process keeps the heap it grew, so each target's peak RSS there is its
// own and not what earlier workloads left behind.
export const HTTP_WORKLOADS: readonly Workload[] = [
  { name: "1 MB response, 200 conns", connections: 200, ...SMALL, body: rpc("eth_getLogs") },
  SMALL_CALL_50,
  { name: "eth_blockNumber, 200 conns", connections: 200, ...SMALL },
  {
    name: "batch of 10, 50 conns",
    connections: 50,
    ...SMALL,
    body: `[${Array.from({ length: 10 }, (_, i) => rpc("eth_blockNumber", i + 1)).join(",")}]`,
  },
  { name: "REST GET, 50 conns", connections: 50, method: "GET", path: "/v2/status", label: "algo" },
];
