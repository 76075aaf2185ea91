import type { UpstreamSpec } from "./types.js";

/** An upstream's name in logs and the operator API: its own, else its origin and base path, without credentials. */
export function upstreamName(spec: string | UpstreamSpec): string {
  const { url, name } = typeof spec === "string" ? { url: spec, name: undefined } : spec;
  if (name !== undefined) return name;
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`;
}
