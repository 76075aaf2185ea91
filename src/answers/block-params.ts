import type { PassedCall } from "../jsonrpc/check.js";
import type { BlockParamRule, ReadRules } from "../registry/types.js";
import { readHeight } from "../upstream/head.js";

// How a call's params name a block, as the registry's read rules place and write it: what the read need
// (read-need.ts, rest-read-need.ts), the range plan and the cache each read a block param by.

/** What `blockParam` answers for a call that names no block the rules read. */
export const NO_BLOCK_PARAM = Symbol("no block param");

/** A head tag as a call gives it: the value itself, or its object's tag member (`{"finality": "final"}`). */
export function tagOf(rule: BlockParamRule, value: unknown): unknown {
  if (rule.tagMember === undefined || typeof value !== "object" || value === null) return value;
  return (value as Record<string, unknown>)[rule.tagMember];
}

/**
 * A call's block param as `reads.at` places it (undefined when the caller left it out: the head), or
 * NO_BLOCK_PARAM when the method has none, or its params do not match the method's `reads.when`.
 */
export function blockParam(rules: ReadRules, call: PassedCall): unknown {
  const position = rules.at?.[call.method];
  if (position === undefined) return NO_BLOCK_PARAM;
  const params = (call.call.value as { params?: unknown }).params;
  const when = rules.when?.[call.method];
  if (when !== undefined) {
    if (typeof params !== "object" || params === null) return NO_BLOCK_PARAM;
    for (const [member, wanted] of Object.entries(when)) {
      const given = (params as Record<string, unknown>)[member];
      if (given !== wanted && !(rules.block.numbersAsText === true && sameNumber(given, wanted)))
        return NO_BLOCK_PARAM;
    }
  }
  if (Array.isArray(position)) return lastGiven(rules, call.method, params, position);
  if (position !== "params") return paramAt(rules, call.method, params, position as number);
  if (!Array.isArray(params)) return params;
  // the same call in its positional form: its block param where the registry places it, if it does
  const path = rules.positionalAt?.[call.method];
  if (path === undefined) return params;
  // a param that nests no deeper than the form it takes there (a hash where `[block_id, shard_id]` may
  // stand) is the param itself
  let value: unknown = params;
  for (const index of path) {
    if (!Array.isArray(value)) break;
    value = value[index];
  }
  return value;
}

/**
 * The param at `position` of a call's params: by its place in an array, or, in an object of params by name
 * (`{"block_id": …}`, as some SDKs send them), by the name the registry gives that place (`reads.paramNames`).
 */
export function paramAt(rules: ReadRules, method: string, params: unknown, position: number): unknown {
  if (Array.isArray(params)) return params[position];
  const name = rules.paramNames?.[method]?.[position];
  if (name === undefined || typeof params !== "object" || params === null) return undefined;
  return (params as Record<string, unknown>)[name];
}

/** Of a method's block param positions, the param at the last one the call gives (undefined: none, the head). */
function lastGiven(rules: ReadRules, method: string, params: unknown, positions: readonly number[]): unknown {
  let value: unknown;
  for (const position of positions) {
    const given = paramAt(rules, method, params, position);
    if (given !== undefined) value = given;
  }
  return value;
}

/** Whether a filter's member is given: a node reads a null member as one left out (serde's None, Go's nil). */
export function isGiven(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** A call's params in their positional order, those sent by name placed by the registry's names. */
export function positional(rules: ReadRules, method: string, params: unknown): readonly unknown[] {
  if (Array.isArray(params)) return params;
  const names = rules.paramNames?.[method];
  if (names === undefined || typeof params !== "object" || params === null) return [];
  const values = names.map((name) => (params as Record<string, unknown>)[name]);
  while (values.length > 0 && values.at(-1) === undefined) values.pop();
  return values;
}

/**
 * What a block param names: the head (a head tag, or the param left out), a block by number (a genesis tag
 * is block 0) or by hash, or nothing this rule routes by (another tag, or a value the node will refuse).
 */
export function namedBlock(rule: BlockParamRule, value: unknown): "head" | "hash" | "none" | number {
  if (value === undefined || value === null) return "head";
  // a list of blocks (a block-hash call may take one): the read needs the highest of them
  if (Array.isArray(value)) return highestOf(value.map((element) => namedBlock(rule, element)));
  if (typeof value === "object" && !Array.isArray(value)) {
    const members = value as Record<string, unknown>;
    if (rule.tagMember !== undefined && members[rule.tagMember] !== undefined) return "head";
    if (rule.hashMember !== undefined && members[rule.hashMember] !== undefined) return "hash";
    const number = rule.numberMember === undefined ? undefined : members[rule.numberMember];
    if (number !== undefined) return namedBlock(rule, number);
    return rule.unnamedIsHead === true ? "head" : "none";
  }
  if (isOneOf(rule.headTags, value)) return "head";
  // `earliest`: the chain's first block, a state read an archive node alone may still have
  if (isGenesisTag(rule, value)) return 0;
  if (typeof value === "string" && rule.headRelative !== undefined && compiled(rule.headRelative).test(value))
    return "head";
  if (typeof value === "string" && rule.hashPattern !== undefined && compiled(rule.hashPattern).test(value))
    return "hash";
  if (typeof value === "string" && rule.offsets !== undefined) {
    const offset = offsetBlock(rule, rule.offsets, value);
    if (offset !== undefined) return offset;
  }
  if (typeof value === "number" && rule.plainNumbers === true) return readHeight(value, "integer") ?? "none";
  // a node that reads a number in hex too (Thor's base-0 ParseUint): a block it has not reached it answers as
  // one by number, `null`, so the read needs that block as the decimal one does
  if (typeof value === "string" && rule.hexNumbers === true && /^0x/i.test(value))
    return readHeight(value, "hex-quantity") ?? "none";
  // decimal text read as the number it says, whatever `encoding` (Nethermind's and anvil's block numbers)
  if (
    typeof value === "string" &&
    rule.numbersAsText === true &&
    (rule.encoding === "integer" || /^\d+$/.test(value))
  )
    return readHeight(value, "decimal-string") ?? "none";
  return readHeight(value, rule.encoding) ?? "none";
}

/**
 * A block named by another and a count of blocks after or before it (`reads.block.offsets`): Octez reads
 * `5000000+1` and `genesis+5000001` as level 5000001, which a node below it answers 404, so such a name needs
 * that level as the level itself does; `<hash>~N` is still a read by hash, `head~N` at the head. Undefined
 * when `value` has no delimiter; "none" for a name the node refuses (two delimiters, `head+N`).
 */
function offsetBlock(
  rule: BlockParamRule,
  offsets: NonNullable<BlockParamRule["offsets"]>,
  value: string,
): "head" | "hash" | "none" | number | undefined {
  let at = -1;
  let sign = 0;
  for (let i = 1; i < value.length; i++) {
    const char = value.charAt(i);
    const step = offsets.after.includes(char) ? 1 : offsets.before.includes(char) ? -1 : 0;
    if (step === 0) continue;
    // Octez takes one delimiter, no more
    if (at >= 0) return "none";
    at = i;
    sign = step;
  }
  if (at < 0) return undefined;
  const countText = value.slice(at + 1);
  const count =
    readHeight(countText, "decimal-string") ??
    (rule.hexNumbers === true ? readHeight(countText, "hex-quantity") : undefined);
  if (count === undefined) return "none";
  // the base has no delimiter left: it is read as any block name is
  const base = namedBlock(rule, value.slice(0, at));
  if (base === "hash" || base === "none") return base;
  if (base === "head") return sign < 0 ? "head" : "none";
  const height = base + sign * count;
  return height >= 0 ? height : "none";
}

/** A number and its decimal text (`-1` and `"-1"`), as a node that coerces one to the other reads them. */
function sameNumber(given: unknown, wanted: unknown): boolean {
  return (
    typeof given === "string" && typeof wanted === "number" && given.trim() !== "" && Number(given) === wanted
  );
}

/** Of blocks a list names, the one a node must have reached: "none" when any is no block a rule reads. */
function highestOf(named: readonly ("head" | "hash" | "none" | number)[]): "head" | "hash" | "none" | number {
  if (named.length === 0 || named.includes("none")) return "none";
  if (named.includes("head")) return "head";
  if (named.includes("hash")) return "hash";
  // a loop, not Math.max(...): a list as long as a body may hold would pass the call stack's bound
  let highest = -1;
  for (const n of named as number[]) if (n > highest) highest = n;
  return highest;
}

/** The registry's patterns, each compiled once. */
const PATTERNS = new Map<string, RegExp>();

function compiled(pattern: string): RegExp {
  let regExp = PATTERNS.get(pattern);
  if (regExp === undefined) {
    regExp = new RegExp(pattern);
    PATTERNS.set(pattern, regExp);
  }
  return regExp;
}

/** Whether a block param is a tag naming the chain's first block (`reads.block.genesisTags`). */
export function isGenesisTag(rule: BlockParamRule, value: unknown): boolean {
  return rule.genesisTags !== undefined && isOneOf(rule.genesisTags, value);
}

// A tag in any case is the tag: nodes built on alloy (Reth, anvil) read `LATEST` and `Earliest` as
// `latest` and `earliest`, so a guard that read them as plain text let `0x0..LATEST` reach a node whole.
// A node that refuses another case still refuses it; the gateway only reads the block as the tag.

/** Whether `value` is one of `tags`, in any case. */
export function isOneOf(tags: readonly string[], value: unknown): boolean {
  if (typeof value !== "string") return false;
  return tags.includes(value) || (!value.startsWith("0x") && tags.includes(value.toLowerCase()));
}

/** Whether `value` is `tag`, in any case. */
export function isTag(tag: string | undefined, value: unknown): value is string {
  return tag !== undefined && typeof value === "string" && (value === tag || value.toLowerCase() === tag);
}
