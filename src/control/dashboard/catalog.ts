import type { Endpoint, HeadCall } from "../../registry/types.js";

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
  readonly firstCall: FirstCall;
  /** The same call in the SDK people use with the interface (registry `example`); `{url}` is the URL. */
  readonly example?: { readonly sdk: string; readonly code: string };
}

/** The head call as a request a caller can send: what the prober asks every node, so it works everywhere. */
export interface FirstCall {
  readonly method: string;
  /** Below the key: `/` for JSON-RPC, the route for REST. */
  readonly path: string;
  readonly body?: string;
}

/** The registry's networks for the dashboard, from the generated tables: nothing about a network is written here. */
export function networkCatalog(endpoints: ReadonlyMap<string, Endpoint>): NetworkEntry[] {
  const byCode = new Map<
    string,
    {
      name: string;
      endpoints: NetworkEntry["endpoints"][number][];
      head: HeadCall;
      example: Endpoint["example"];
    }
  >();
  for (const endpoint of endpoints.values()) {
    let entry = byCode.get(endpoint.code);
    if (entry === undefined) {
      entry = { name: endpoint.networkName, endpoints: [], head: endpoint.head, example: endpoint.example };
      byCode.set(endpoint.code, entry);
    }
    entry.endpoints.push({
      label: endpoint.label,
      environment: endpoint.environment,
      nodeClass: endpoint.nodeClass,
      websocket: endpoint.websocket,
    });
  }
  return [...byCode]
    .map(([code, { name, endpoints, head, example }]) => ({
      code,
      name,
      endpoints,
      firstCall: firstCallOf(head),
      ...(example === undefined ? {} : { example }),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

function firstCallOf(head: HeadCall): FirstCall {
  if (head.kind === "jsonrpc")
    return {
      method: "POST",
      path: "/",
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: head.method, params: head.params ?? [] }),
    };
  return {
    method: head.method,
    path: head.path,
    ...(head.body === undefined ? {} : { body: JSON.stringify(head.body) }),
  };
}
