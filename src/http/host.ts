import { GatewayError } from "../errors/table.js";

export type HostTarget =
  | { readonly kind: "label"; readonly label: string }
  | { readonly kind: "public"; readonly label: string };

const HOST_CHARS = /^[a-z0-9.-]+$/;
// Clients send the same few Host values over and over; past this many distinct ones the memo starts over.
const MEMO_SIZE = 1024;

interface Resolved {
  readonly name: string;
  readonly target: HostTarget;
}

/**
 * Finds the network from the request's one Host header (RFC 9112 §3.2): compared without case, with an
 * optional port and trailing dot. Node keeps the first of two Host headers, so rawHeaders is read here.
 */
export class HostResolver {
  readonly #suffix: string;
  readonly #publicHosts: ReadonlyMap<string, string>;
  /** Host header value as sent → what it resolved to; only values that resolved are kept. */
  readonly #memo = new Map<string, Resolved>();

  constructor(domain: string, publicHosts: Readonly<Record<string, string>>) {
    this.#suffix = `.${normaliseName(domain)}`;
    this.#publicHosts = new Map(
      Object.entries(publicHosts).map(([host, label]) => [normaliseName(host), label]),
    );
  }

  resolve(rawHeaders: readonly string[], url: string): HostTarget {
    let host: string | undefined;
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i] as string;
      if (name.length === 4 && name.toLowerCase() === "host") {
        if (host !== undefined) throw new GatewayError("BAD_HOST", { reason: "more than one Host header" });
        host = rawHeaders[i + 1] as string;
      }
    }
    if (host === undefined) throw new GatewayError("BAD_HOST", { reason: "no Host header" });
    const resolved = this.#memo.get(host) ?? this.#remember(host);
    if (url.charCodeAt(0) !== 47 /* "/" */) checkAbsoluteForm(url, resolved.name);
    return resolved.target;
  }

  #remember(host: string): Resolved {
    const name = hostName(host);
    const publicLabel = this.#publicHosts.get(name);
    let target: HostTarget;
    if (publicLabel !== undefined) target = { kind: "public", label: publicLabel };
    else {
      if (!name.endsWith(this.#suffix)) throw new GatewayError("UNKNOWN_NETWORK");
      const label = name.slice(0, -this.#suffix.length);
      if (label.length === 0 || label.includes(".")) throw new GatewayError("UNKNOWN_NETWORK");
      target = { kind: "label", label };
    }
    if (this.#memo.size >= MEMO_SIZE) this.#memo.clear();
    const resolved = { name, target };
    this.#memo.set(host, resolved);
    return resolved;
  }
}

/** `ETH.Example.COM.:443` → `eth.example.com`; anything that is not a plain host name is refused. */
function hostName(value: string): string {
  let host = value.trim().toLowerCase();
  const colon = host.lastIndexOf(":");
  if (colon >= 0) {
    const port = host.slice(colon + 1);
    if (!/^\d{1,5}$/.test(port)) throw new GatewayError("BAD_HOST", { reason: "malformed port" });
    host = host.slice(0, colon);
  }
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (
    host.length === 0 ||
    host.endsWith(".") ||
    host.length > 253 ||
    !HOST_CHARS.test(host) ||
    host.includes("..")
  ) {
    throw new GatewayError("BAD_HOST", { reason: "malformed host name" });
  }
  return host;
}

function normaliseName(host: string): string {
  return hostName(host);
}

/** RFC 9112 §3.2.2: with an absolute-form target the authority must be the same host. */
function checkAbsoluteForm(url: string, host: string): void {
  const match = /^https?:\/\/([^/?#]*)/i.exec(url);
  if (match === null) throw new GatewayError("BAD_PATH", { reason: "the request target must start with /" });
  // user:password@ before the host: no node takes credentials from a caller, and the key goes in the path
  if ((match[1] as string).includes("@"))
    throw new GatewayError("BAD_HOST", { reason: "the request target carries credentials (user:password@)" });
  if (hostName(match[1] as string) !== host) {
    throw new GatewayError("BAD_HOST", { reason: "the request target names another host" });
  }
}
