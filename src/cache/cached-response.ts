import type { ServerResponse } from "node:http";
import { TIER_HEADER } from "../answers/archive.js";
import { ANY_ORIGIN, EXPOSED_HEADERS } from "../errors/respond.js";
import { pushAnswerTag } from "../http/request-id.js";
import type { CacheEntry } from "./answer-cache.js";

// How an answer the cache holds is written to an HTTP client: its bytes around the client's own id.

/** The response header that says how the cache answered: `hit`, `miss` or `coalesced`. */
export const CACHE_HEADER = "x-cache";

/** A page's script may read how the cache answered, and which tier did. */
export const EXPOSED = { "access-control-expose-headers": EXPOSED_HEADERS };

/**
 * A kept answer with the caller's id in it, with the content type its node gave (JSON for JSON-RPC). A small
 * one goes as latin1 text, which Node writes in one piece with the headers; a Buffer body takes a second
 * write (writev showed as the hit path's largest cost, bench/ab.ts with --cpu-prof, 2026-11-26).
 */
export function sendKept(
  res: ServerResponse,
  statusCode: number,
  entry: Pick<CacheEntry, "before" | "after" | "contentType" | "headers">,
  id: string,
  headers: string[],
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  headers.push("content-type", entry.contentType ?? "application/json");
  if (entry.headers !== undefined) headers.push(...entry.headers);
  const length = entry.before.length + entry.after.length;
  if (length <= SMALL_BYTES) {
    const text = entry.before.toString("latin1") + asLatin1(id) + entry.after.toString("latin1");
    headers.push("content-length", String(text.length));
    res.writeHead(statusCode, pushAnswerTag(res, statusCode, headers));
    res.end(text, "latin1");
    return;
  }
  // a large one in three writes, corked into one: no copy of it per caller
  const idBytes = Buffer.from(id);
  headers.push("content-length", String(length + idBytes.length));
  res.writeHead(statusCode, pushAnswerTag(res, statusCode, headers));
  res.cork();
  res.write(entry.before);
  if (idBytes.length > 0) res.write(idBytes);
  res.end(entry.after);
  res.uncork();
}

/** Answers up to this size are written as text with their headers. */
const SMALL_BYTES = 16 * 1024;

/** An id's source text as latin1 text of its UTF-8 bytes (an id may be a string of any characters). */
function asLatin1(id: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range, whose bytes are its characters
  return /^[\x00-\x7f]*$/.test(id) ? id : Buffer.from(id).toString("latin1");
}

/**
 * The answer's headers as Node's flat list of names and values, which send() adds to: an object grown
 * member by member changed shape on every answer (docs/performance.md).
 */
export function headersFor(
  outcome: "hit" | "miss" | "coalesced",
  tier: "full" | "archive" | undefined,
): string[] {
  const headers = [
    "access-control-allow-origin",
    ANY_ORIGIN["access-control-allow-origin"],
    "access-control-expose-headers",
    EXPOSED["access-control-expose-headers"],
    CACHE_HEADER,
    outcome,
  ];
  if (tier !== undefined) headers.push(TIER_HEADER, tier);
  return headers;
}
