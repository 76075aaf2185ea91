import type { AccessLine } from "../log.js";
import { archiveUnits, type BatchPart, callsUnits } from "../plans/compute-units.js";
import type { ComputeUnits, Endpoint } from "../registry/types.js";

/**
 * The compute units an HTTP exchange (http.ts) served, from what it noted at stage 4 (its calls' units, a
 * batch's parts, the mount's rules, the endpoint, the plan's cachedShare) and what its access line says
 * happened since. Plain functions of those notes: the exchange makes nothing per request for its price.
 */

/**
 * What the request cost in compute units: its calls' registry costs, times the archive factor when an
 * archive node answered; nothing when it was not served (refused, rate limited, failed: as the anchors
 * bill, docs/compute-units.md).
 */
export function unitsServed(
  result: string,
  access: AccessLine,
  computeUnits: number,
  parts: readonly BatchPart[] | undefined,
  rules: ComputeUnits | undefined,
  endpoint: Endpoint | undefined,
  archiveEndpoint: boolean,
  cachedShare: number,
): number {
  if (result !== "ok" || rules === undefined) return 0;
  // a range split into sub-ranges cost the nodes a call each; a batch's calls refused as needing an archive
  // node cost nothing
  const units = computeUnits * (access.parts ?? 1) - unitsOf(access.requiredMethods, rules, endpoint);
  const priced = archivePriced(units, rules, access, endpoint, archiveEndpoint);
  // an answer the cache gave, or one node answer shared, costs what the plan says
  const cached = access.cache === "hit" || access.cache === "coalesced";
  // the plan's, whether or not it has a quota: a bill counts these units too
  const share = cachedShare;
  if (share === 1) return priced;
  if (cached) return Math.round(priced * share);
  // a batch answered in part without a node call: each call at its own price
  if (parts === undefined || access.cachedMethods === undefined) return priced;
  return batchServed(parts, rules, share, access, endpoint, archiveEndpoint);
}

/**
 * A batch some of whose calls were answered without a node call of their own, on a plan whose cachedShare
 * is below 1: each call at its price, times the archive factor when an archive node's answer (kept or
 * fresh) answered it, times the share when it had no node call; one answered ARCHIVE_REQUIRED at nothing.
 * Scaling the whole batch's price by the share of its weight spread one call's archive price over all.
 */
function batchServed(
  parts: readonly BatchPart[],
  rules: ComputeUnits,
  share: number,
  access: AccessLine,
  endpoint: Endpoint | undefined,
  archiveEndpoint: boolean,
): number {
  const factor = rules.archive;
  let sum = 0;
  for (const { method, calls, weight } of parts) {
    const required = countOf(access.requiredMethods, method);
    const cached = countOf(access.cachedMethods, method);
    // on an archive label every call an archive node answered, kept or fresh
    const archived = archiveEndpoint ? calls - required : countOf(access.archivedMethods, method);
    const both = archiveEndpoint ? cached : countOf(access.cachedArchivedMethods, method);
    const fresh = calls - required - archived - cached + both;
    sum += weight * (fresh + (archived - both) * factor + (cached - both) * share + both * factor * share);
  }
  return Math.round(sum * (endpoint?.computeUnitMultiplier ?? 1));
}

/**
 * What an archive node's answers cost: the whole request on an archive label, or a single read it
 * answered; of a batch, only the calls it answered, the rest at a full node's price.
 */
function archivePriced(
  units: number,
  rules: ComputeUnits,
  access: AccessLine,
  endpoint: Endpoint | undefined,
  archiveEndpoint: boolean,
): number {
  if (archiveEndpoint) return archiveUnits(units, rules);
  if (access.tier !== "archive") return units;
  const archived = access.archivedMethods;
  if (archived === undefined) return archiveUnits(units, rules);
  const theirs = unitsOf(archived, rules, endpoint);
  return units - theirs + archiveUnits(theirs, rules);
}

/** What calls of these methods cost at a full node's price. */
function unitsOf(
  methods: readonly string[] | undefined,
  rules: ComputeUnits,
  endpoint: Endpoint | undefined,
): number {
  if (methods === undefined || endpoint === undefined) return 0;
  return callsUnits(rules, methods, endpoint);
}

/**
 * The batch's calls by method for the key's usage, each method weighed at what its calls were priced
 * (unitsServed): those answered without a node call at the plan's cachedShare.
 */
export function pricedParts(
  parts: readonly BatchPart[] | undefined,
  access: AccessLine,
  share: number,
): readonly BatchPart[] | undefined {
  const methods = access.cachedMethods;
  if (parts === undefined || methods === undefined || share === 1) return parts;
  if (access.cache === "hit" || access.cache === "coalesced") return parts;
  return parts.map((part) => {
    let cached = 0;
    for (const method of methods) if (method === part.method) cached += 1;
    return { ...part, weight: (part.weight * (part.calls - cached * (1 - share))) / part.calls };
  });
}

/** How many times `method` is in `methods`. */
function countOf(methods: readonly string[] | undefined, method: string): number {
  let count = 0;
  for (const each of methods ?? []) if (each === method) count++;
  return count;
}
