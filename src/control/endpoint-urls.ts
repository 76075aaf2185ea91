import { isIPv6 } from "node:net";
import type { AccountsConfig, GatewayConfig } from "../config/types.js";
import type { Endpoint } from "../registry/types.js";

// The one place that writes a customer's URLs: the key e-mails, the dashboard (through GET /v1/networks) and
// the local demo's banner all take theirs from here, so what one shows is what the others show.

/** Where callers reach the gateway: a label is prefixed to `domain`, and `port` is left out when it is the scheme's. */
export interface GatewayOrigin {
  readonly secure: boolean;
  readonly domain: string;
  readonly port?: number;
}

/** What the dashboard writes where a key goes: it never has the key, which is e-mailed once. */
export const KEY_PLACEHOLDER = "YOUR_API_KEY";

/**
 * The deployment's origin from its config: TLS on a real domain (terminated in front of the proxies, so no
 * port), plain HTTP on `localhost` with the port the proxy listens on, as `npm start` serves it.
 */
export function gatewayOrigin(gateway: {
  readonly domain: GatewayConfig["domain"];
  readonly listen: Pick<GatewayConfig["listen"], "port">;
}): GatewayOrigin {
  return gateway.domain === "localhost"
    ? { secure: false, domain: gateway.domain, port: gateway.listen.port }
    : { secure: true, domain: gateway.domain };
}

/** A label's HTTP and WebSocket URLs for `key`: `https://<label>.<domain>/<key>/` and `wss://<label>.<domain>/<key>`. */
export function labelUrls(origin: GatewayOrigin, label: string, key: string): { http: string; ws: string } {
  const host = `${label}.${origin.domain}${origin.port === undefined ? "" : `:${origin.port}`}`;
  return {
    http: `${origin.secure ? "https" : "http"}://${host}/${key}/`,
    ws: `${origin.secure ? "wss" : "ws"}://${host}/${key}`,
  };
}

/** A label as a customer is shown it: the WebSocket URL only where the registry serves WebSocket. */
export interface LabelEndpoint {
  readonly label: string;
  readonly environment: string;
  readonly nodeClass: string;
  readonly http: string;
  readonly ws?: string;
}

export function labelEndpoint(origin: GatewayOrigin, endpoint: Endpoint, key: string): LabelEndpoint {
  const urls = labelUrls(origin, endpoint.label, key);
  return {
    label: endpoint.label,
    environment: endpoint.environment,
    nodeClass: endpoint.nodeClass,
    http: urls.http,
    ...(endpoint.websocket ? { ws: urls.ws } : {}),
  };
}

/** What a key may reach: its networks (codes, or all) and whether archive labels are among them. */
export interface KeyScope {
  readonly networks: readonly string[] | "*";
  readonly archive: boolean;
}

/**
 * Whether a key reaches a label: the same two checks the proxy makes on every request (the network is
 * granted; an archive label needs archive access, `scope.archive` as the key's plan reads its grant), so no
 * URL is shown that the gateway would refuse.
 */
function scopeReaches(scope: KeyScope, endpoint: Endpoint): boolean {
  if (scope.networks !== "*" && !scope.networks.includes(endpoint.code)) return false;
  return scope.archive || endpoint.nodeClass !== "archive";
}

/** A network's labels that a key reaches, with their URLs. */
export interface NetworkEndpoints {
  readonly code: string;
  readonly name: string;
  readonly endpoints: readonly LabelEndpoint[];
}

/** Every label `key` reaches, grouped by network in the registry's order, with the key in each URL. */
export function keyEndpoints(
  origin: GatewayOrigin,
  endpoints: ReadonlyMap<string, Endpoint>,
  scope: KeyScope,
  key: string,
): NetworkEndpoints[] {
  const byCode = new Map<string, { name: string; endpoints: LabelEndpoint[] }>();
  for (const endpoint of endpoints.values()) {
    if (!scopeReaches(scope, endpoint)) continue;
    let network = byCode.get(endpoint.code);
    if (network === undefined) {
      network = { name: endpoint.networkName, endpoints: [] };
      byCode.set(endpoint.code, network);
    }
    network.endpoints.push(labelEndpoint(origin, endpoint, key));
  }
  return [...byCode].map(([code, network]) => ({ code, ...network }));
}

/**
 * Where the dashboard and the self-service API are reached, for the e-mails' links: `publicUrl`, else the
 * listener: an IPv6 address in brackets, and an unspecified one (every interface: `0.0.0.0`, `::`), which is
 * no address a browser opens, as `localhost` (control/main.ts warns that customers elsewhere need publicUrl).
 */
export function dashboardUrl(accounts: Pick<AccountsConfig, "publicUrl" | "listen">): string {
  if (accounts.publicUrl !== undefined) return accounts.publicUrl;
  const { host, port } = accounts.listen;
  const shown = isUnspecified(host) ? "localhost" : isIPv6(host) ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}

/** Whether a listener's host is every interface's, as `0.0.0.0` and `::` are. */
export function isUnspecified(host: string): boolean {
  return host === "0.0.0.0" || host === "::" || host === "[::]";
}

/** The dashboard's page that redeems a confirmation or sign-in token (its route reads the fragment). */
export function tokenLink(dashboard: string, purpose: "confirm" | "signin", token: string): string {
  return `${dashboard}/#${purpose}=${token}`;
}
