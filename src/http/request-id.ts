import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { holdsKeyShape, KEY_PREFIX, looksLikeKey } from "../keys/types.js";
import { rawHeader } from "./raw-headers.js";

/** The header that carries a request's id, from the caller, on the answer, and to the node. */
export const REQUEST_ID_HEADER = "x-request-id";

/**
 * The header that says what an answer cost in compute units (docs/compute-units.md), so that a customer
 * can add up a bill's units from the answers it got: 0 for a call the gateway refused or no node served.
 */
export const COMPUTE_UNITS_HEADER = "x-compute-units";

/** What a data plane answer's head carries besides the node's or the gateway's own headers. */
export interface AnswerTag {
  /** The request's id (X-Request-Id). */
  readonly id: string;
  /** The compute units of the answer now written with this status: what the key's usage will count. */
  units(status: number): number;
}

const TAG = Symbol("answerTag");
type Tagged = ServerResponse & { [TAG]?: AnswerTag };

/**
 * The caller's X-Request-Id when it is well-formed (1 to 128 letters, digits and `.` `_` `:` `-`: a UUID, a
 * ULID, a trace's id), else a new id (`newRequestId`). Anything else from the caller is not repeated: an id
 * goes into the log line, error bodies and the node's request, where a header's arbitrary text must not.
 */
export function requestIdFor(rawHeaders: readonly string[], target: string): string {
  const given = rawHeader(rawHeaders, REQUEST_ID_HEADER, true);
  return given !== undefined && WELL_FORMED.test(given) && !carriesKey(given, target)
    ? given
    : newRequestId();
}

/**
 * Whether an id carries an API key: the id is logged, echoed, passed to the node and put on spans, where a
 * key never goes, so a caller that tags its calls with its key (`app-<key>-42`) gets a new one. The
 * request's key (its first path segment) anywhere in the id, or anything shaped like a key where a word
 * starts (a key the gateway does not see as the request's: a public host's call, a key in the query), as
 * the query's rule reads it (http/target.ts).
 */
function carriesKey(id: string, target: string): boolean {
  // every key starts with its prefix: an id without it (a UUID, a trace's id) is read no further
  if (!id.includes(KEY_PREFIX)) return false;
  if (holdsKeyShape(id)) return true;
  const key = firstSegment(target);
  return looksLikeKey(key) && id.includes(key);
}

/** The target's first path segment; an absolute-form target (a forward proxy's) has its path after the authority. */
function firstSegment(target: string): string | undefined {
  const path = target.charCodeAt(0) === 47 ? 0 : target.indexOf("/", target.indexOf("//") + 2);
  if (path < 0) return undefined;
  const end = target.slice(path + 1).search(/[/?]/);
  return end < 0 ? target.slice(path + 1) : target.slice(path + 1, path + 1 + end);
}

/**
 * A new request id: a UUID (RFC 9562's version 8, its custom layout) whose first 74 bits are random and
 * drawn once per process, and whose last 48 count the process's requests from a random start. It is unique
 * as a random UUID is (two processes share a prefix with odds of one in 2⁷⁴), which is all an id needs: it
 * names a request, it guards nothing. `randomUUID()` drew and formatted 16 random bytes per request, 0.6 µs
 * of a cached answer's 50 in its profile; this is one counter's hex (docs/performance.md).
 */
export function newRequestId(): string {
  return processIds.next();
}

const HALF = 0xffffff;

/**
 * The ids' counter, 48 bits kept as two halves of 24: each half is a small integer, whose hex V8 writes
 * in about 35 ns, where `toString(16)` of the whole count (a double past 2³¹) took about 300.
 */
export class RequestIds {
  readonly #prefix: string;
  #high: number;
  #low: number;
  /** The prefix and the high half's hex, rewritten once every 2²⁴ ids. */
  #highText: string;

  /** `start`: the first id's counter, below 2⁴⁸. */
  constructor(prefix: string, start: number) {
    this.#prefix = prefix;
    this.#high = Math.floor(start / (HALF + 1)) & HALF;
    this.#low = (start % (HALF + 1)) - 1;
    this.#highText = prefix + hex6(this.#high);
  }

  next(): string {
    this.#low += 1;
    if (this.#low > HALF) {
      this.#low = 0;
      this.#high = (this.#high + 1) & HALF;
      this.#highText = this.#prefix + hex6(this.#high);
    }
    return this.#highText + hex6(this.#low);
  }
}

function hex6(half: number): string {
  return half.toString(16).padStart(6, "0");
}

/** `xxxxxxxx-xxxx-8xxx-Vxxx-` from 10 random bytes: the version nibble 8, the variant bits 10. */
function uuidPrefix(random: Buffer): string {
  const hex = random.toString("hex");
  const variant = (8 | (Number.parseInt(hex.charAt(16), 16) & 3)).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-`;
}

const processIds = new RequestIds(uuidPrefix(randomBytes(10)), randomBytes(6).readUIntBE(0, 6));

const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

/** Notes the request's id and pricing on its response, for every place that writes the answer's head. */
export function tagResponse(res: ServerResponse, tag: AnswerTag): void {
  (res as Tagged)[TAG] = tag;
}

/** The response's request id, if its request has one (an HTTP request of the data plane). */
export function requestIdOf(res: ServerResponse): string | undefined {
  return (res as Tagged)[TAG]?.id;
}

/** Raw headers for writeHead at `status` with the request id and the answer's units among them. */
export function withAnswerTag(res: ServerResponse, status: number, headers: readonly string[]): string[] {
  const tag = (res as Tagged)[TAG];
  return tag === undefined
    ? (headers as string[])
    : [...headers, REQUEST_ID_HEADER, tag.id, COMPUTE_UNITS_HEADER, String(tag.units(status))];
}

/** Adds the request id and the answer's units, if any, to a flat list the caller owns; returns the list. */
export function pushAnswerTag(res: ServerResponse, status: number, headers: string[]): string[] {
  const tag = (res as Tagged)[TAG];
  if (tag !== undefined)
    headers.push(REQUEST_ID_HEADER, tag.id, COMPUTE_UNITS_HEADER, String(tag.units(status)));
  return headers;
}

/** A headers object for writeHead at `status` with the request id and units among them (the caller's own). */
export function addAnswerTag(
  res: ServerResponse,
  status: number,
  headers: Record<string, string | number | string[]>,
): Record<string, string | number | string[]> {
  const tag = (res as Tagged)[TAG];
  if (tag !== undefined) {
    headers[REQUEST_ID_HEADER] = tag.id;
    headers[COMPUTE_UNITS_HEADER] = String(tag.units(status));
  }
  return headers;
}
