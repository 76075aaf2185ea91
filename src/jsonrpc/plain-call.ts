import {
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  envelopeNameAt,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
} from "./json-chars.js";
import type { ParsedBody, RawCall } from "./scan.js";

const MINUS = 45;
const PLUS = 43;
const DOT = 46;
const ZERO = 48;
const NINE = 57;
const LOWER_E = 101;
const UPPER_E = 69;

/**
 * Reads the calls most traffic is, in one pass and without JSON.parse: one object, or a batch of them,
 * whose members are only the envelope's, each named once and without escapes, with scalar values (strings
 * without escapes) and params, if any, a scalar or an array of scalars —
 * `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x…","latest"]}`. It follows JSON's grammar
 * (RFC 8259) strictly for this subset and answers undefined for anything else, which then takes the
 * general path: so it can only be faster, never more permissive, than JSON.parse
 * (test/jsonrpc/plain-call.test.ts checks this against it).
 */
export function readPlainBody(text: string, maxDepth: number): ParsedBody | undefined {
  let i = skipSpace(text, 0);
  const batch = text.charCodeAt(i) === OPEN_ARRAY;
  // A call's params sit two levels down, three inside a batch.
  if (maxDepth < (batch ? 3 : 2)) return undefined;
  if (batch) i = skipSpace(text, i + 1);
  const calls: RawCall[] = [];
  for (;;) {
    i = readCall(text, i, calls);
    if (i < 0) return undefined;
    i = skipSpace(text, i);
    if (!batch) break;
    const c = text.charCodeAt(i);
    if (c === CLOSE_ARRAY) {
      i = skipSpace(text, i + 1);
      break;
    }
    if (c !== COMMA) return undefined;
    i = skipSpace(text, i + 1);
  }
  // Checked last, so that a body which is not plain leaves at its first other construct without a pass
  // over all of it; what was read before is thrown away if the text has an escape after all.
  return i === text.length && !ESCAPE_OR_CONTROL.test(text) ? { batch, calls } : undefined;
}

/** Reads the call object opened at `open` into `calls`: past its closing brace, or -1. */
function readCall(text: string, open: number, calls: RawCall[]): number {
  if (text.charCodeAt(open) !== OPEN_OBJECT) return -1;
  const members = new Map<string, string>();
  const value: Record<string, unknown> = {};
  let i = skipSpace(text, open + 1);
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) return -1;
    const nameEnd = plainStringEnd(text, i);
    const name = nameEnd < 0 ? undefined : envelopeNameAt(text, i + 1, nameEnd - 1);
    if (name === undefined || members.has(name)) return -1;
    i = skipSpace(text, nameEnd);
    if (text.charCodeAt(i) !== COLON) return -1;
    const from = skipSpace(text, i + 1);
    let to: number;
    if (name === "params" && text.charCodeAt(from) === OPEN_ARRAY) {
      const items: unknown[] = [];
      to = scalarArrayEnd(text, from, items);
      value[name] = items;
    } else {
      to = scalarEnd(text, from);
      if (to >= 0) value[name] = scalarValue(text, from, to);
    }
    if (to < 0) return -1;
    members.set(name, text.slice(from, to));
    i = skipSpace(text, to);
    const c = text.charCodeAt(i);
    if (c === CLOSE_OBJECT) break;
    if (c !== COMMA) return -1;
    i = skipSpace(text, i + 1);
  }
  calls.push({ value, members });
  return i + 1;
}

/** The end of `[scalar, …]` opened at `open`, pushing each item's value, or -1. */
function scalarArrayEnd(text: string, open: number, items: unknown[]): number {
  let i = skipSpace(text, open + 1);
  if (text.charCodeAt(i) === CLOSE_ARRAY) return i + 1;
  for (;;) {
    const end = scalarEnd(text, i);
    if (end < 0) return -1;
    items.push(scalarValue(text, i, end));
    i = skipSpace(text, end);
    const c = text.charCodeAt(i);
    if (c === CLOSE_ARRAY) return i + 1;
    if (c !== COMMA) return -1;
    i = skipSpace(text, i + 1);
  }
}

/** The end of a string without escapes, a number, true, false or null starting at `i`, or -1. */
function scalarEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return plainStringEnd(text, i);
  if (c === MINUS || isDigit(c)) return numberEnd(text, i);
  for (const literal of LITERALS) if (text.startsWith(literal, i)) return i + literal.length;
  return -1;
}

const LITERALS = ["true", "false", "null"];

/** The value of a scalar `scalarEnd` accepted; a valid JSON number reads the same to Number as to JSON.parse. */
function scalarValue(text: string, from: number, to: number): unknown {
  switch (text.charCodeAt(from)) {
    case QUOTE:
      return text.slice(from + 1, to - 1);
    case 116:
      return true;
    case 102:
      return false;
    case 110:
      return null;
    default:
      return Number(text.slice(from, to));
  }
}

/**
 * Bodies with a backslash or a control character anywhere (even a newline between members) take the
 * general path. Without them every string ends at its next quote (`plainStringEnd`), and irregexp checks
 * the whole text in about half the time a loop over its characters takes.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON refuses these unescaped in a string
const ESCAPE_OR_CONTROL = /[\\\u0000-\u001f]/;

/** Past the next quote after `open`, or -1: the string's end once the text is known to have no escapes. */
function plainStringEnd(text: string, open: number): number {
  const close = text.indexOf('"', open + 1);
  return close < 0 ? -1 : close + 1;
}

/** `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` from `i`: its end, or -1. */
function numberEnd(text: string, i: number): number {
  if (text.charCodeAt(i) === MINUS) i++;
  if (text.charCodeAt(i) === ZERO) i++;
  else if (isDigit(text.charCodeAt(i))) i = digitsEnd(text, i);
  else return -1;
  if (text.charCodeAt(i) === DOT) {
    if (!isDigit(text.charCodeAt(i + 1))) return -1;
    i = digitsEnd(text, i + 1);
  }
  const e = text.charCodeAt(i);
  if (e === LOWER_E || e === UPPER_E) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === PLUS || sign === MINUS) i++;
    if (!isDigit(text.charCodeAt(i))) return -1;
    i = digitsEnd(text, i);
  }
  return i;
}

function digitsEnd(text: string, i: number): number {
  while (isDigit(text.charCodeAt(i))) i++;
  return i;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** Past the spaces from `i`; the other whitespace JSON allows is a control character, refused above. */
function skipSpace(text: string, i: number): number {
  while (text.charCodeAt(i) === 32) i++;
  return i;
}
