import { isIPv6 } from "node:net";
import type { GatewayConfig } from "../config/types.js";
import { curlCommand, firstCallOf } from "../control/dashboard/catalog.js";
import { type GatewayOrigin, gatewayOrigin, labelUrls } from "../control/endpoint-urls.js";
import type { Endpoint } from "../registry/types.js";
import type { LocalNode } from "./local-nodes.js";

/** A curl line that works as printed: the label's first call, as the dashboard shows it, with the key in. */
export function curlLine(endpoint: Endpoint, origin: GatewayOrigin, key: string): string {
  return curlCommand(labelUrls(origin, endpoint.label, key).http, firstCallOf(endpoint));
}

/** The local demo's banner: the key, curl lines for the local nodes, and where everything is. */
export function printDemo(options: {
  config: GatewayConfig;
  port: number;
  key: string;
  nodes: readonly LocalNode[];
  accountsPort: number | undefined;
  operatorPort?: number | undefined;
  endpoints: ReadonlyMap<string, Endpoint>;
}): void {
  const { config, port, key, nodes, accountsPort, operatorPort, endpoints } = options;
  // The port the proxy took, which may differ from listen.port (0 picks a free one).
  const origin = gatewayOrigin({ domain: config.domain, listen: { port } });
  const lines = ["", `API key (shown once): ${key}`, "", "Try it:"];
  for (const node of nodes) {
    const endpoint = endpoints.get(node.label);
    if (endpoint !== undefined) lines.push(`  ${curlLine(endpoint, origin, key)}`);
  }
  const first = nodes[0] && endpoints.get(nodes[0].label);
  if (first?.websocket) lines.push(`  WebSocket: ${labelUrls(origin, first.label, key).ws}`);
  lines.push(
    "",
    `Every label is served at ${labelUrls(origin, "<label>", "<API_KEY>").http} (curl resolves *.localhost by itself;`,
    `a node:http or axios client can send the request to 127.0.0.1:${port} with a Host header of <label>.${config.domain},`,
    `but fetch (Node's, undici) replaces that header: resolve *.${config.domain} to 127.0.0.1 for it instead, README "Using it locally").`,
    "Labels without a local node answer 503 until GATEWAY_UPSTREAM_<LABEL> or a GATEWAY_CONFIG file gives them upstreams.",
  );
  if (accountsPort !== undefined && config.accounts !== undefined) {
    const mail = config.accounts.mail.smtp
      ? `SMTP ${config.accounts.mail.smtp.host}`
      : `the outbox folder ${config.accounts.mail.outbox}/`;
    const accounts = `http://${urlHost(config.accounts.listen.host)}:${accountsPort}`;
    lines.push(
      `Dashboard (sign up, keys, usage): ${accounts}/`,
      `Self-service API: ${accounts}/v1/signup (e-mails go to ${mail}).`,
    );
  }
  if (operatorPort !== undefined && config.operator !== undefined)
    lines.push(
      `Operator API (upstreams, their state and head): http://${urlHost(config.operator.listen.host)}:${operatorPort}/upstreams`,
    );
  lines.push("");
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** A host as a URL writes it: an IPv6 address in brackets. */
function urlHost(host: string): string {
  return isIPv6(host) ? `[${host}]` : host;
}
