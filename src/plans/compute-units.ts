import type { ComputeUnits, Endpoint } from "../registry/types.js";

/**
 * What calls cost in compute units (registry `computeUnits`, docs/compute-units.md): each JSON-RPC call by
 * its method, each REST request by its route's shape, else the interface's default, times the network's
 * multiplier. Calls the gateway refused cost nothing.
 */
export function callsUnits(units: ComputeUnits, methods: readonly string[], endpoint: Endpoint): number {
  let sum = 0;
  for (const method of methods) sum += units.methods.get(method) ?? units.default;
  return Math.round(sum * endpoint.computeUnitMultiplier);
}

/** A batch's calls of one method, and what one of them weighs in compute units before the network's multiplier. */
export interface BatchPart {
  readonly method: string;
  readonly calls: number;
  readonly weight: number;
}

/** What a batch's calls weigh together, in compute units before the network's multiplier. */
export function weightOf(parts: readonly BatchPart[]): number {
  let sum = 0;
  for (const part of parts) sum += part.calls * part.weight;
  return sum;
}

/** A batch's parts less one call of each of `methods` (calls refused after they were priced). */
export function withoutCalls(parts: readonly BatchPart[], methods: readonly string[]): BatchPart[] {
  const less = new Map<string, number>();
  for (const method of methods) less.set(method, (less.get(method) ?? 0) + 1);
  return parts.flatMap((part) => {
    const calls = part.calls - (less.get(part.method) ?? 0);
    return calls > 0 ? [{ ...part, calls }] : [];
  });
}

/** A batch's calls by method, in the order first seen: the key's usage counts each method apart. */
export function batchParts(units: ComputeUnits, methods: readonly string[]): BatchPart[] {
  const counts = new Map<string, number>();
  for (const method of methods) counts.set(method, (counts.get(method) ?? 0) + 1);
  return [...counts].map(([method, calls]) => ({
    method,
    calls,
    weight: units.methods.get(method) ?? units.default,
  }));
}

/** One REST request's compute units, by its route (`GET /chains/{}/blocks/{}`). */
export function routeUnits(units: ComputeUnits, route: string, endpoint: Endpoint): number {
  return Math.round((units.routes.get(route) ?? units.default) * endpoint.computeUnitMultiplier);
}

/** A request an archive node answered costs the interface's archive factor times as much. */
export function archiveUnits(units: number, computeUnits: ComputeUnits): number {
  return Math.round(units * computeUnits.archive);
}
