import type { GatewayConfig } from "../config/types.js";
import type { Endpoint } from "../registry/types.js";
import type { LocalNode } from "./local-nodes.js";

/** A curl line that works as printed: the label's own head call, from the registry. */
export function curlLine(endpoint: Endpoint, domain: string, port: number, key: string): string {
  const base = `http://${endpoint.label}.${domain}:${port}/${key}`;
  const head = endpoint.head;
  if (head.kind === "rest") {
    const body =
      head.body === undefined ? "" : ` -H 'content-type: application/json' -d '${JSON.stringify(head.body)}'`;
    return `curl -s -X ${head.method} ${base}${head.path}${body}`;
  }
  const mount = endpoint.mounts.find((m) => m.policy.jsonrpc?.methods.get(head.method) === "shared");
  const path = mount === undefined || mount.path === "/" ? "/" : mount.path;
  // some interfaces (Ogmios) refuse a params member the method does not take, so none is invented
  const call = {
    jsonrpc: "2.0",
    id: 1,
    method: head.method,
    ...(head.params === undefined ? {} : { params: head.params }),
  };
  return `curl -s ${base}${path} -H 'content-type: application/json' -d '${JSON.stringify(call)}'`;
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
  const lines = ["", `API key (shown once): ${key}`, "", "Try it:"];
  for (const node of nodes) {
    const endpoint = endpoints.get(node.label);
    if (endpoint !== undefined) lines.push(`  ${curlLine(endpoint, config.domain, port, key)}`);
  }
  const first = nodes[0] && endpoints.get(nodes[0].label);
  if (first?.websocket) lines.push(`  WebSocket: ws://${first.label}.${config.domain}:${port}/${key}`);
  lines.push(
    "",
    `Every label is served at http://<label>.${config.domain}:${port}/<API_KEY>/ (curl resolves *.localhost by itself;`,
    `other clients can send the request to 127.0.0.1:${port} with a Host header of <label>.${config.domain}).`,
    "Labels without a local node answer 503 until GATEWAY_UPSTREAM_<LABEL> or a GATEWAY_CONFIG file gives them upstreams.",
  );
  if (accountsPort !== undefined && config.accounts !== undefined) {
    const mail = config.accounts.mail.smtp
      ? `SMTP ${config.accounts.mail.smtp.host}`
      : `the outbox folder ${config.accounts.mail.outbox}/`;
    lines.push(
      `Self-service API: http://${config.accounts.listen.host}:${accountsPort}/v1/signup (e-mails go to ${mail}).`,
    );
  }
  if (operatorPort !== undefined && config.operator !== undefined)
    lines.push(
      `Operator API (upstreams, their state and head): http://${config.operator.listen.host}:${operatorPort}/upstreams`,
    );
  lines.push("");
  process.stdout.write(`${lines.join("\n")}\n`);
}
