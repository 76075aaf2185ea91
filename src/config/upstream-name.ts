import type { UpstreamSpec } from "./types.js";

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
    .map((segment) => (looksSecret(segment) ? "…" : segment))
    .join("/");
  return `${parsed.origin}${path}`;
}

function looksSecret(segment: string): boolean {
  return segment.length >= 16 && /[0-9]/.test(segment) && /[A-Za-z]/.test(segment);
}
