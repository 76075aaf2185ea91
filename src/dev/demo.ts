import type { Endpoint } from "../registry/types.js";

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
  const call = { jsonrpc: "2.0", id: 1, method: head.method, params: head.params ?? [] };
  return `curl -s ${base}${path} -H 'content-type: application/json' -d '${JSON.stringify(call)}'`;
}
