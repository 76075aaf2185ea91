import type { UpstreamSpec } from "./types.js";

/** What an upstream's name writes in place of a secret part of its URL, and what node text gets in its place. */
const MASK = "…";

/**
 * An upstream's one name, in logs, metrics and the operator API: its own, else its origin and base path
 * without credentials, and with any path segment that looks like a secret (a provider's key, such as
 * Infura's `/v3/<key>`: 16 or more characters mixing letters and digits) written as `…`.
 */
export function upstreamName(spec: string | UpstreamSpec): string {
  const { url, name } = typeof spec === "string" ? { url: spec, name: undefined } : spec;
  if (name !== undefined) return name;
  const parsed = new URL(url);
  const path = parsed.pathname
    .replace(/\/+$/, "")
    .split("/")
    .map((segment) => (looksSecret(segment) ? MASK : segment))
    .join("/");
  return `${parsed.origin}${path}`;
}

function looksSecret(segment: string): boolean {
  return segment.length >= 16 && /[0-9]/.test(segment) && /[A-Za-z]/.test(segment);
}

/** Text with an upstream's secrets written as `…`. */
export type Redact = (text: string) => string;

/** The redactor of a URL that holds no secret: text goes as it is. */
export const NOTHING_HIDDEN: Redact = (text) => text;

// Below this length a credential or a query value (a chain id, `true`, `main`) is a word the node's text
// holds for its own reasons: it is masked only where the URL's own form shows it (`name=value`, `user:pass@`).
const SHORTEST_ALONE = 6;

/**
 * What the gateway writes in place of what a node's text (an error page quoting the path it was asked on,
 * a proxy's echo of the request) shows of the parts of `url` that its name hides: its credentials, as written
 * and as the Basic authorization the gateway sends for them; each path segment that `upstreamName` masks;
 * its query's values. Each is masked as written in the URL, percent-decoded and JSON-escaped, whatever the
 * upstream's own name: a name given in the config hides nothing of the URL's. Built once per upstream, from
 * its URL and its WebSocket URL when it has one of its own, which may hold a key of its own.
 */
export function urlRedactor(...urls: readonly string[]): Redact {
  return upstreamRedactor(urls, {});
}

/**
 * urlRedactor's, and the values of the headers the config gives the upstream: they are where a provider's
 * token goes (`X-Algo-API-Token`, `X-API-Key`, `Authorization: Bearer <token>`, docs/configuration.md),
 * and a proxy's page echoing the request's headers quotes them. A value is masked whole (a scheme before
 * its token kept: `Bearer …`), and its token alone, which a page may quote without the scheme.
 */
export function upstreamRedactor(urls: readonly string[], headers: Readonly<Record<string, string>>): Redact {
  const masks = new Map<string, string>();
  for (const url of urls) collectSecrets(new URL(url), masks);
  for (const value of Object.values(headers)) collectHeaderSecrets(value.trim(), masks);
  if (masks.size === 0) return NOTHING_HIDDEN;
  // the longest first: `apikey=<value>` keeps its name, and no shorter secret inside a longer one is left
  const secrets = [...masks.keys()].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(
    secrets.map((secret) => secret.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"),
    "g",
  );
  return (text) => text.replace(pattern, (found) => masks.get(found) ?? MASK);
}

/** Each secret of `parsed` in `masks`, with what is written in its place. */
function collectSecrets(parsed: URL, masks: Map<string, string>): void {
  const alone = (raw: string): void => {
    for (const form of forms(raw)) if (form.length >= SHORTEST_ALONE) masks.set(form, MASK);
  };
  const { username, password } = parsed;
  if (username !== "" || password !== "") {
    const userinfo = password === "" ? username : `${username}:${password}`;
    masks.set(`${userinfo}@`, `${MASK}@`);
    const user = decoded(username);
    const pass = decoded(password);
    masks.set(Buffer.from(`${user}:${pass}`).toString("base64"), MASK);
    alone(username);
    alone(password);
  }
  for (const segment of parsed.pathname.split("/")) if (looksSecret(segment)) alone(segment);
  for (const item of parsed.search.slice(1).split("&")) {
    if (item === "") continue;
    const equals = item.indexOf("=");
    // `?<key>`: a query that is a value without a name
    const value = equals === -1 ? item : item.slice(equals + 1);
    if (value === "") continue;
    if (equals !== -1) masks.set(item, `${item.slice(0, equals)}=${MASK}`);
    alone(value);
  }
}

/** A configured header's value in `masks`: whole, and the token after an auth scheme (`Bearer`, `Basic`). */
function collectHeaderSecrets(value: string, masks: Map<string, string>): void {
  const scheme = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)\s+(\S.*)$/.exec(value);
  const token = scheme?.[2];
  for (const form of forms(value))
    if (form.length >= SHORTEST_ALONE) masks.set(form, scheme === null ? MASK : `${scheme[1]} ${MASK}`);
  if (token !== undefined)
    for (const form of forms(token)) if (form.length >= SHORTEST_ALONE) masks.set(form, MASK);
}

/** A URL part as written, percent-decoded (`+` as a space too, as a query's), and JSON-escaped. */
function forms(raw: string): string[] {
  const plain = decoded(raw);
  const spaced = decoded(raw.replace(/\+/g, " "));
  return [...new Set([raw, plain, spaced].flatMap((form) => [form, JSON.stringify(form).slice(1, -1)]))];
}

function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
