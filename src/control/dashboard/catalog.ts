import type { PlanSpec } from "../../config/types.js";
import type { Endpoint, HeadCall } from "../../registry/types.js";
import { type PlanTermsView, planTermsView } from "../accounts/key-view.js";
import {
  type GatewayOrigin,
  KEY_PLACEHOLDER,
  type LabelEndpoint,
  labelEndpoint,
  labelUrls,
} from "../endpoint-urls.js";

/** A network as the dashboard lists it: its endpoints, and a first call built from its interface's head call. */
export interface NetworkEntry {
  readonly code: string;
  readonly name: string;
  readonly endpoints: readonly {
    readonly label: string;
    readonly environment: string;
    readonly nodeClass: string;
    readonly websocket: boolean;
  }[];
  /** The label the first call and the snippet are shown at: its mainnet, or its first label. */
  readonly firstLabel: string;
  readonly firstCall: FirstCall;
  /** The same call in the SDK people use with the interface (registry `example`); `{url}` is the URL. */
  readonly example?: Endpoint["example"];
}

/** The head call as a request a caller can send: what the prober asks every node, so it works everywhere. */
export interface FirstCall {
  readonly method: string;
  /** Below the key: the mount that serves the method for JSON-RPC, the route for REST. */
  readonly path: string;
  readonly body?: string;
}

/** The registry's networks for the dashboard, from the generated tables: nothing about a network is written here. */
export function networkCatalog(endpoints: ReadonlyMap<string, Endpoint>): NetworkEntry[] {
  const byCode = new Map<string, Endpoint[]>();
  for (const endpoint of endpoints.values()) {
    const labels = byCode.get(endpoint.code) ?? [];
    labels.push(endpoint);
    byCode.set(endpoint.code, labels);
  }
  return [...byCode]
    .map(([code, labels]) => {
      const first = labels.find((e) => e.environment === "mainnet") ?? (labels[0] as Endpoint);
      return {
        code,
        name: first.networkName,
        endpoints: labels.map(({ label, environment, nodeClass, websocket }) => ({
          label,
          environment,
          nodeClass,
          websocket,
        })),
        firstLabel: first.label,
        firstCall: firstCallOf(first),
        ...(first.example === undefined ? {} : { example: first.example }),
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * A plan a customer may order, with the terms the page shows beside its name (docs/plans.md): the same
 * terms a key's view carries (src/control/accounts/key-view.ts), its compute-unit burst and whether its
 * quotas are the key's or the account's among them.
 */
export interface OrderablePlan extends PlanTermsView {
  readonly name: string;
  readonly maxKeys: number;
}

/**
 * The plans the page offers: the deployment's orderable ones, as the API takes orders for them, so that a
 * plan an operator adds or changes reaches the page with no code (the free test is offered apart).
 */
export function orderablePlans(plans: Readonly<Record<string, PlanSpec>>): OrderablePlan[] {
  return Object.entries(plans)
    .filter(([, plan]) => plan.orderable)
    .map(([name, plan]) => planOffer(name, plan));
}

/** A plan's terms as the page shows them: its rate, quotas, archive access and keys. */
export function planOffer(name: string, plan: PlanSpec): OrderablePlan {
  return { name, ...planTermsView(plan), maxKeys: plan.maxKeys };
}

/** A network as the page shows it, every URL from endpoint-urls.ts with KEY_PLACEHOLDER for the key. */
export interface DashboardNetwork {
  readonly code: string;
  readonly name: string;
  readonly endpoints: readonly LabelEndpoint[];
  /** The first call as a curl command line at the first label. */
  readonly curl: string;
  /** The registry's snippet with the first label's URL put in. */
  readonly sdk?: { readonly name: string; readonly code: string };
}

/** GET /v1/networks' networks: the page writes no URL of its own. */
export function dashboardNetworks(
  endpoints: ReadonlyMap<string, Endpoint>,
  origin: GatewayOrigin,
): DashboardNetwork[] {
  return networkCatalog(endpoints).map((network) => {
    const url = labelUrls(origin, network.firstLabel, KEY_PLACEHOLDER).http;
    return {
      code: network.code,
      name: network.name,
      endpoints: network.endpoints.map(({ label }) =>
        labelEndpoint(origin, endpoints.get(label) as Endpoint, KEY_PLACEHOLDER),
      ),
      curl: curlCommand(url, network.firstCall),
      ...(network.example === undefined
        ? {}
        : { sdk: { name: network.example.sdk, code: snippet(network.example, url) } }),
    };
  });
}

/**
 * The first call as a curl command line, given the label's HTTP URL (which ends in `/`). The method is
 * written out for anything but GET, so a REST route's POST reads as one.
 */
export function curlCommand(url: string, call: FirstCall): string {
  const target = `${url.replace(/\/$/, "")}${call.path}`;
  const method = call.method === "GET" ? "" : `-X ${call.method} `;
  const body = call.body === undefined ? "" : ` -H 'content-type: application/json' -d '${call.body}'`;
  return `curl -s ${method}${target}${body}`;
}

/** The label's head call: the network's own head where the registry gives one, else its root interface's. */
export function firstCallOf(endpoint: Endpoint): FirstCall {
  const head: HeadCall = endpoint.head;
  if (head.kind === "rest")
    return {
      method: head.method,
      path: head.path,
      ...(head.body === undefined ? {} : { body: JSON.stringify(head.body) }),
    };
  // At the mount whose dialect serves the method, which need not be the root.
  const mount = endpoint.mounts.find((m) => m.policy.jsonrpc?.methods.get(head.method) === "shared");
  // Some dialects (Ogmios) refuse a params member the method does not take: none is invented.
  const call = {
    jsonrpc: "2.0",
    id: 1,
    method: head.method,
    ...(head.params === undefined ? {} : { params: head.params }),
  };
  return { method: "POST", path: mount?.path ?? "/", body: JSON.stringify(call) };
}

/**
 * Node does not resolve `<label>.localhost` (ENOTFOUND; curl and browsers do), so where the deployment's
 * domain is `localhost` (the embedded default, `npm start`) a snippet first makes such names resolve to
 * loopback in its process, as the README's "Using it locally" does: run as printed, it reaches the gateway.
 */
export const LOCALHOST_LOOKUP = `import dns from "node:dns";
// *.localhost does not resolve in Node: send it to 127.0.0.1 (README, "Using it locally")
const lookup = dns.lookup;
dns.lookup = (host, options, callback) => {
  if (typeof options === "function") [options, callback] = [{}, options];
  if (!host.endsWith(".localhost")) return lookup(host, options, callback);
  if (options.all) callback(null, [{ address: "127.0.0.1", family: 4 }]);
  else callback(null, "127.0.0.1", 4);
};
`;

/** The registry's snippet with the URL put in: its plain-HTTP form for an http:// URL, where it has one. */
function snippet(example: { readonly code: string; readonly http?: string }, url: string): string {
  const code = url.startsWith("http://") && example.http !== undefined ? example.http : example.code;
  const local = new URL(url).hostname.endsWith(".localhost");
  return `${local ? LOCALHOST_LOOKUP : ""}${code.replace("{url}", url)}`;
}
