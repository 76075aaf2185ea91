import { GatewayError } from "../errors/table.js";
import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  envelopeNameAt,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
} from "./json-chars.js";
import { readPlainBody } from "./plain-call.js";

/** One request object of a body: its parsed value and the raw source text of each top-level member. */
export interface RawCall {
  readonly value: unknown;
  /** Member name to its value's source text, exactly as the caller wrote it (an id keeps all its digits). */
  readonly members: ReadonlyMap<string, string>;
}

export interface ParsedBody {
  readonly batch: boolean;
  readonly calls: readonly RawCall[];
}

/**
 * A JSON-RPC body's calls. The common calls, alone or in a batch, are read in one pass (plain-call.ts);
 * any other body takes `parseAnyJsonRpcBody`.
 */
export function parseJsonRpcBody(text: string, maxDepth: number): ParsedBody {
  return readPlainBody(text, maxDepth) ?? parseAnyJsonRpcBody(text, maxDepth);
}

/**
 * Reads any JSON-RPC body in one iterative pass before anything recursive touches it: it bounds the
 * nesting depth, refuses a member named twice in a request object (so no second reading of the bytes can
 * see another method), and keeps each member's source text, then lets V8's JSON.parse check the syntax.
 */
export function parseAnyJsonRpcBody(text: string, maxDepth: number): ParsedBody {
  const spans = scanEnvelopes(text, maxDepth);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new GatewayError("PARSE_ERROR");
  }
  if (Array.isArray(value)) {
    let next = 0;
    const calls = value.map((item: unknown) => ({
      value: item,
      members: isObject(item) ? (spans[next++] ?? EMPTY) : EMPTY,
    }));
    return { batch: true, calls };
  }
  return { batch: false, calls: [{ value, members: isObject(value) ? (spans[0] ?? EMPTY) : EMPTY }] };
}

const EMPTY: ReadonlyMap<string, string> = new Map();

/**
 * The top-level members of each object in a message a node sent, without parsing the values: enough to
 * tell a response (id and result or error) from a notification, at a fraction of JSON.parse's cost on a
 * large block. The node's JSON is trusted; a duplicate member keeps its last value.
 */
export function scanMembers(text: string): ReadonlyMap<string, string>[] {
  return scanEnvelopes(text, Number.POSITIVE_INFINITY, false);
}

/**
 * Refuses a body nesting arrays or objects deeper than `maxDepth` (NESTING_TOO_DEEP), in the same one
 * iterative pass that reads a JSON-RPC body's envelopes: for any other JSON a caller sent (a REST body),
 * before JSON.parse, a recursive walk of it or a node reads it.
 */
export function checkJsonDepth(text: string, maxDepth: number): void {
  scanEnvelopes(text, maxDepth, false);
}

/**
 * The source text of each element of a JSON array a node sent, without the spaces around it; undefined
 * when the text is not an array. The node's JSON is trusted (its caller parses it too).
 */
export function arrayElements(text: string): string[] | undefined {
  let start = 0;
  while (start < text.length && isSpace(text.charCodeAt(start))) start++;
  if (text.charCodeAt(start) !== OPEN_ARRAY) return undefined;
  const elements: string[] = [];
  const add = (from: number, to: number): void => {
    while (from < to && isSpace(text.charCodeAt(from))) from++;
    while (to > from && isSpace(text.charCodeAt(to - 1))) to--;
    if (to > from) elements.push(text.slice(from, to));
  };
  let depth = 0;
  let from = start + 1;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = endOfString(text, i);
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (--depth === 0) {
        add(from, i);
        break;
      }
    } else if (c === COMMA && depth === 1) {
      add(from, i);
      from = i + 1;
    }
  }
  return elements;
}

/**
 * Whether JSON text nests deeper than `maxDepth` arrays and objects, in one iterative pass (brackets in
 * strings do not count). A node's answer is read with JSON.parse, which takes any depth, but
 * JSON.stringify and every recursive walk of the value it gives throw RangeError a few thousand levels
 * down: an answer that deep is refused before anything walks it (upstream/policy.ts `fetchWhole`).
 */
export function nestsDeeperThan(text: string, maxDepth: number): boolean {
  // each level takes an opening bracket: a shorter text cannot be that deep
  if (text.length <= maxDepth) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = endOfString(text, i);
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}

function isObject(value: unknown): boolean {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function scanEnvelopes(text: string, maxDepth: number, refuseDuplicates = true): Map<string, string>[] {
  const envelopes: Map<string, string>[] = [];
  let start = 0;
  while (start < text.length && isSpace(text.charCodeAt(start))) start++;
  // Request objects sit at depth 1 in a single call and at depth 2 inside a batch.
  const envelopeDepth = text.charCodeAt(start) === OPEN_ARRAY ? 2 : 1;
  let depth = 0;
  let current: Map<string, string> | undefined;
  let expectKey = false;
  let key = "";
  let valueStart = -1;

  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = endOfString(text, i);
      if (expectKey && depth === envelopeDepth && current !== undefined) {
        key = keyAt(text, i, end);
        expectKey = false;
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      if (depth > maxDepth) throw new GatewayError("NESTING_TOO_DEEP", { maxDepth });
      if (depth === envelopeDepth && c === OPEN_OBJECT) {
        current = new Map();
        expectKey = true;
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === envelopeDepth && current !== undefined) {
        if (valueStart >= 0) addMember(current, key, text, valueStart, i, refuseDuplicates);
        valueStart = -1;
        envelopes.push(current);
        current = undefined;
      }
      depth--;
    } else if (depth === envelopeDepth && current !== undefined) {
      if (c === COLON) valueStart = i + 1;
      else if (c === COMMA) {
        if (valueStart >= 0) addMember(current, key, text, valueStart, i, refuseDuplicates);
        valueStart = -1;
        expectKey = true;
      }
    }
  }
  return envelopes;
}

/**
 * Adds a member's value, as its source text between `from` and `to` without the spaces around it. A
 * function rather than a closure over the scan's variables: those would then live in a heap context, and
 * the scan ran at about twice the time.
 */
function addMember(
  members: Map<string, string>,
  key: string,
  text: string,
  from: number,
  to: number,
  refuseDuplicates: boolean,
): void {
  if (refuseDuplicates) {
    if (members.has(key)) throw new GatewayError("DUPLICATE_MEMBER", { member: key });
    const folded = envelopeMemberInAnotherCase(key);
    if (folded !== undefined)
      throw new GatewayError("INVALID_REQUEST", {
        member: key,
        reason: `"${key}" is "${folded}" in another case, which a node written in Go (geth, Erigon) reads as "${folded}" (the last of two wins): write it "${folded}", once`,
      });
  }
  while (from < to && isSpace(text.charCodeAt(from))) from++;
  while (to > from && isSpace(text.charCodeAt(to - 1))) to--;
  members.set(key, text.slice(from, to));
}

/** The closing quote of the string opened at `open`: a native search, then a count of the backslashes before it. */
function endOfString(text: string, open: number): number {
  let quote = text.indexOf('"', open + 1);
  while (quote >= 0) {
    let slashes = 0;
    for (let j = quote - 1; text.charCodeAt(j) === BACKSLASH; j--) slashes++;
    if (slashes % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
  return text.length;
}

/**
 * The envelope member `key` names in another case (`Method`, `PARAMS`, `paramſ`), or undefined. Go's
 * encoding/json, which geth and Erigon decode a request with, matches member names
 * without regard to case (Unicode's simple folding) and keeps the last of two: `{"method":"eth_call",
 * "Method":"admin_addPeer"}` calls admin_addPeer there, past every check the gateway made on `method`.
 */
function envelopeMemberInAnotherCase(key: string): string | undefined {
  if (key === "jsonrpc" || key === "id" || key === "method" || key === "params") return undefined;
  if (key.length > 8) return undefined;
  // upper then lower case folds ſ (U+017F) to s and K (U+212A) to k, as Go's simple folding does
  const folded = key.toUpperCase().toLowerCase();
  return folded === "jsonrpc" || folded === "id" || folded === "method" || folded === "params"
    ? folded
    : undefined;
}

/** A member name, decoded only when it has an escape in it. */
function keyAt(text: string, open: number, close: number): string {
  const known = envelopeNameAt(text, open + 1, close);
  if (known !== undefined) return known;
  const name = text.slice(open + 1, close);
  if (!name.includes("\\")) return name;
  try {
    return JSON.parse(text.slice(open, close + 1)) as string;
  } catch {
    return text.slice(open, close + 1);
  }
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}
