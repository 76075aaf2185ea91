import { GatewayError } from "../errors/table.js";
import { holdsKeyShape, KEY_PREFIX, looksLikeKey } from "../keys/types.js";

export interface RequestTarget {
  /** The first path segment when the route is keyed; never forwarded, logged or echoed. */
  readonly key: string | undefined;
  /** The path after the key, always starting with "/", with no empty, dot or encoded-separator segment. */
  readonly path: string;
  readonly segments: readonly string[];
  /** The query string with its "?", or "". */
  readonly query: string;
}

// Percent-encoded dot, slash, backslash and NUL: WHATWG URL and some upstream routers decode them into
// path syntax, so they are refused rather than passed on (Envoy offers the same refusal for escaped
// slashes); the gateway cannot know how each upstream decodes them. An asterisk too: a route's own
// (a call of clauses at `POST /accounts/*` in one interface of the registry), which that node's router reads from `%2A` decoded,
// where the gateway's routes, a key's method list and a plan would read a segment `%2A`.
const ENCODED_SEPARATOR = /%(2e|2f|5c|00|2a)/i;

/**
 * Splits the raw request target once, as sent: no URL parser runs on it, so nothing the caller writes
 * can change the upstream's host or base path. An absolute-form target was checked against Host already.
 */
export function parseTarget(
  url: string,
  keyed: boolean | ((first: string) => boolean),
  isKey?: (candidate: string) => boolean,
): RequestTarget {
  let target = url;
  if (target.charCodeAt(0) !== 47) target = target.replace(/^https?:\/\/[^/?#]*/i, "") || "/";
  const q = target.indexOf("?");
  const rawPath = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? "" : target.slice(q);
  if (rawPath.charCodeAt(0) !== 47) throw badPath("the path must start with /");
  if (query.includes("#") || rawPath.includes("#")) throw badPath("fragments are not sent to servers");
  if (rawPath.includes("\\") || rawPath.includes("\0")) throw badPath("backslash or NUL in the path");
  if (rawPath.includes("%") && ENCODED_SEPARATOR.test(rawPath)) {
    throw badPath("encoded dot, slash, backslash, asterisk or NUL in the path");
  }
  const parts = segmentsOf(rawPath);
  const first = parts[0];
  const hasKey = typeof keyed === "function" ? first !== undefined && keyed(first) : keyed;
  const key = hasKey ? parts.shift() : undefined;
  return {
    key,
    path: parts.length === 0 ? "/" : `/${parts.join("/")}`,
    segments: parts,
    query: forwardedQuery(query, key, isKey),
  };
}

/**
 * The query without the parameters that carry a key: tools that append it as `?apikey=` would otherwise
 * hand it to the node's operator, a third-party provider's among them. With a key in the path, those that
 * hold it, and those that hold another key this gateway knows (`isKey`: a tool's `?apikey=` left at the
 * caller's key for another network, or at the one a rotation replaced); without one (a public host's
 * keyless call), those that hold a key's shape, the caller's key as far as the gateway can tell. A keyed
 * call's other key-shaped values go on: an address may look like one.
 */
function forwardedQuery(
  query: string,
  key: string | undefined,
  isKey: ((candidate: string) => boolean) | undefined,
): string {
  // a key needs its prefix, written or percent-encoded
  if (!query.includes(KEY_PREFIX) && !query.includes("%")) return query;
  if (key !== undefined) {
    // the node reads a parameter percent-decoded: `apikey=%46N…` is the key as much as `apikey=FN…` is
    return without(query, (parameter) => {
      const text = decoded(parameter);
      return text.includes(key) || (isKey !== undefined && holdsKnownKey(text, isKey));
    });
  }
  return without(query, (parameter) => holdsKeyShape(decoded(parameter)));
}

/** Whether one of `text`'s words (runs of a key's characters) is a key `isKey` knows. */
function holdsKnownKey(text: string, isKey: (candidate: string) => boolean): boolean {
  if (!holdsKeyShape(text)) return false;
  for (const word of text.split(/[^A-Za-z0-9_-]+/)) if (looksLikeKey(word) && isKey(word)) return true;
  return false;
}

/** The query without the parameters `carriesKey` picks. */
function without(query: string, carriesKey: (parameter: string) => boolean): string {
  const kept = query
    .slice(1)
    .split("&")
    .filter((parameter) => !carriesKey(parameter));
  return kept.length === 0 ? "" : `?${kept.join("&")}`;
}

/** A query parameter as the node reads it: percent-decoded, `+` as a space. */
function decoded(parameter: string): string {
  if (!parameter.includes("%")) return parameter;
  try {
    return decodeURIComponent(parameter.replace(/\+/g, " "));
  } catch {
    return parameter;
  }
}

/** The path's segments; "/", "/a" and "/a/" (a JSON-RPC call's "/<key>") are split without `split`. */
function segmentsOf(rawPath: string): string[] {
  const second = rawPath.indexOf("/", 1);
  // One trailing slash is how users type a root or a directory; it is dropped, never forwarded empty.
  if (second < 0 || second === rawPath.length - 1) {
    const only = second < 0 ? rawPath.slice(1) : rawPath.slice(1, -1);
    if (only === "") return [];
    if (only === "." || only === "..") throw badPath("dot segment in the path");
    return [only];
  }
  const parts = rawPath.split("/");
  parts.shift();
  if (parts[parts.length - 1] === "") parts.pop();
  for (const part of parts) {
    if (part === "") throw badPath("empty path segment");
    if (part === "." || part === "..") throw badPath("dot segment in the path");
  }
  return parts;
}

function badPath(reason: string): GatewayError {
  return new GatewayError("BAD_PATH", { reason });
}
