import type { RestReadRules } from "../registry/types.js";
import { namedBlock } from "./block-params.js";
import { ReadNeed } from "./read-need.js";

const PATH_RULES = new WeakMap<RestReadRules, readonly (readonly [string, number])[]>();

/**
 * The need of a REST request whose route names a block in a path segment (registry `reads.paths`):
 * `/chains/main/blocks/head/…` reads at the head (so does a block counted back from it, where the
 * registry's `headRelative` says how one is written),
 * `/v2/blocks/1000` names a block by number, a hash names none; undefined for any other route.
 */
export function restReadNeed(
  rules: RestReadRules,
  shape: string,
  segments: readonly string[],
): ReadNeed | undefined {
  let paths = PATH_RULES.get(rules);
  if (paths === undefined) {
    paths = Object.entries(rules.paths ?? {});
    PATH_RULES.set(rules, paths);
  }
  const finalized = restFinalizedNeed(rules, shape);
  if (finalized !== undefined) return finalized;
  // where the answer says the height it read (`reads.heightInPaths`): the served head learns it from a read
  // at the head, and a route under a block reads at the head only when its segment names the head
  const height = rules.heightInPaths?.[shape];
  // a route under a block first: `/chains/{}/blocks` (the head's list) may read at the head while
  // `/chains/{}/blocks/{}` names its block
  for (const [prefix, index] of paths) {
    if (shape !== prefix && !shape.startsWith(`${prefix}/`)) continue;
    const segment = segments[index];
    if (segment === undefined) return undefined;
    const named = namedBlock(rules.block, segment);
    if (named === "hash") return restByHashNeed(rules);
    if (named === "none") return undefined;
    if (named === "head" && height !== undefined) return restHeightInNeed(rules, shape, height);
    const need = new ReadNeed();
    need.single = true;
    if (named === "head") need.atHead = true;
    else need.highestBlock = named;
    return need;
  }
  if (height !== undefined) return restHeightInNeed(rules, shape, height);
  return readsAtHead(rules, shape) ? restAtHeadNeed(rules, shape) : undefined;
}

/** Whether a route shape is under one of the interface's finalized views (registry `reads.finalViews`). */
export function inFinalView(rules: RestReadRules, shape: string): boolean {
  return rules.finalViews?.some((prefix) => shape.startsWith(`${prefix}/`)) === true;
}

/**
 * Whether a REST route shape answers from the node's head (registry `reads.atHeadPaths`), or, under one of
 * its finalized views (`reads.finalViews`), from the node's finalized store, as every route there that
 * names no block does (an account, a constant call, a reward on java-tron's /walletsolidity).
 */
export function readsAtHead(rules: RestReadRules, shape: string): boolean {
  if (inFinalView(rules, shape)) return true;
  const paths = rules.atHeadPaths;
  if (paths === undefined) return false;
  let prefixes = AT_HEAD_PREFIXES.get(rules);
  if (prefixes === undefined) {
    prefixes = new Set(paths);
    AT_HEAD_PREFIXES.set(rules, prefixes);
  }
  // the shape itself, then the shape up to each of its slashes: a few lookups, however long the list (java-tron's
  // is some ninety routes)
  for (let end = shape.length; end > 0; end = shape.lastIndexOf("/", end - 1))
    if (prefixes.has(end === shape.length ? shape : shape.slice(0, end))) return true;
  return false;
}

/** Each interface's `atHeadPaths` as a set, made once. */
const AT_HEAD_PREFIXES = new WeakMap<RestReadRules, ReadonlySet<string>>();

/** A REST route that answers from the node's head needs the same every time: one object per interface. */
const AT_HEAD_NEEDS = new WeakMap<RestReadRules, ReadNeed>();
const IN_FINAL_VIEW_NEEDS = new WeakMap<RestReadRules, ReadNeed>();

/**
 * The need of a route that names no block and answers from the node's head, or in a finalized view from
 * the node's finalized block (java-tron's `/walletsolidity/getaccount`): each node answers its own there,
 * and the node at the served head that named the highest goes first, as for the finalized block itself.
 */
export function restAtHeadNeed(rules: RestReadRules, shape: string): ReadNeed {
  const finalView = inFinalView(rules, shape);
  const byRules = finalView ? IN_FINAL_VIEW_NEEDS : AT_HEAD_NEEDS;
  let need = byRules.get(rules);
  if (need === undefined) {
    need = new ReadNeed();
    need.single = true;
    need.atHead = true;
    need.atFinalized = finalView;
    byRules.set(rules, need);
  }
  return need;
}

const AT_FINALIZED_NEEDS = new WeakMap<RestReadRules, Map<string, ReadNeed>>();
const HEIGHT_IN_NEEDS = new WeakMap<RestReadRules, Map<string, ReadNeed>>();

/**
 * The need of a route that reads the node's finalized block (registry `reads.atFinalizedPaths`), or
 * undefined: a body route that names no block there reads that block (java-tron's solidity `getblock`).
 */
export function restFinalizedNeed(rules: RestReadRules, shape: string): ReadNeed | undefined {
  const path = rules.atFinalizedPaths?.[shape];
  return path === undefined ? undefined : restAtFinalizedNeed(rules, shape, path);
}

/** A REST read of the node's finalized block: at the head, and read for the height it answers. */
function restAtFinalizedNeed(rules: RestReadRules, shape: string, path: readonly string[]): ReadNeed {
  return restLearningNeed(AT_FINALIZED_NEEDS, rules, shape, path, true);
}

/** A REST read at the head whose answer says the height it read (`reads.heightInPaths`). */
function restHeightInNeed(rules: RestReadRules, shape: string, path: readonly string[]): ReadNeed {
  return restLearningNeed(HEIGHT_IN_NEEDS, rules, shape, path, false);
}

/** A REST read at the head, read for the height at `path`: one need per route shape. */
function restLearningNeed(
  byRules: WeakMap<RestReadRules, Map<string, ReadNeed>>,
  rules: RestReadRules,
  shape: string,
  path: readonly string[],
  isFinal: boolean,
): ReadNeed {
  let needs = byRules.get(rules);
  if (needs === undefined) {
    needs = new Map<string, ReadNeed>();
    byRules.set(rules, needs);
  }
  let need = needs.get(shape);
  if (need === undefined) {
    need = new ReadNeed();
    need.single = true;
    need.atHead = true;
    need.atFinalized = isFinal;
    need.learn.push({ id: undefined, path, encoding: rules.block.encoding, isHead: false, isFinal });
    needs.set(shape, need);
  }
  return need;
}

/**
 * A REST read of a block by hash, where the interface says how its node answers a block it does not know
 * (`reads.unknownBlockAnswers`): such an answer is asked of another node (answers/by-hash.ts).
 */
export function restByHashNeed(rules: RestReadRules): ReadNeed | undefined {
  if (rules.unknownBlockAnswers === undefined) return undefined;
  const need = new ReadNeed();
  need.single = true;
  need.byHash = true;
  need.unknownAnswers = rules.unknownBlockAnswers;
  return need;
}
