// A reference reading of registry/networks.yaml, written from registry/README.md's glossary with the `yaml`
// package alone and none of codegen's code, so that the conformance suite can hold the generated tables
// against it (hono keeps its precompiled router honest the same way). It is small and slow on purpose: a
// route is answered by filtering the list of templates, not by a trie.
import { readFileSync } from "node:fs";
import { parse } from "yaml";

export type Access = "shared" | "dedicated" | "websocket" | "subscribe" | "unsubscribe";
export type RouteAccess = "shared" | "dedicated" | "stream";

/** The allow groups in the order that decides a method's access when several interfaces share a mount. */
const METHOD_GROUPS: readonly Access[] = ["shared", "dedicated", "websocket", "subscribe", "unsubscribe"];
const ROUTE_GROUPS: readonly RouteAccess[] = ["shared", "dedicated", "stream"];

interface RawInterface {
  family: "jsonrpc" | "rest";
  envelope?: string;
  methods?: Partial<Record<Access | "deny", string[]>>;
  routes?: Partial<Record<RouteAccess | "deny", string[]>>;
  writes?: string[];
  head: {
    method?: string;
    params?: unknown;
    route?: string;
    body?: unknown;
    field: string;
    encoding: string;
  };
}

interface RawEndpoint {
  label: string;
  environment: string;
  nodeClass: string;
  websocket?: boolean;
  public?: boolean;
  chainId?: number;
}

interface RawNetwork {
  code: string;
  name: string;
  noChainId?: string;
  blockTime: number;
  mounts: { path: string; interface: string | string[] }[];
  head?: RawInterface["head"];
  dedicatedOnly?: { name: string; paths: string[] }[];
  endpoints: RawEndpoint[];
}

interface RawRegistry {
  envelopes: Record<string, { batch: boolean; plainTextBody?: boolean }>;
  interfaces: Record<string, RawInterface>;
  networks: RawNetwork[];
}

/** One route template: `GET|POST /a/{b}/{rest...}`. */
export interface RefRoute {
  readonly text: string;
  readonly methods: readonly string[];
  readonly segments: readonly string[];
  readonly access: RouteAccess;
}

export interface RefMount {
  readonly path: string;
  readonly interfaces: readonly string[];
  readonly family: "jsonrpc" | "rest" | "mixed";
  /** For a JSON-RPC mount: its envelope rule, and every allowed method with its access. */
  readonly jsonrpc?: {
    readonly envelope: string;
    readonly batch: boolean;
    readonly plainTextBody: boolean;
    readonly methods: ReadonlyMap<string, Access>;
  };
  /** The `deny` patterns of the mount's interfaces. */
  readonly deniedMethods: readonly string[];
  readonly routes: readonly RefRoute[];
  readonly deniedRoutes: readonly RefRoute[];
  /** The mount's writes: JSON-RPC methods, and routes (a write names a path when it starts with a verb). */
  readonly writeMethods: ReadonlySet<string>;
  readonly writeRoutes: readonly RefRoute[];
}

export interface RefEndpoint {
  readonly label: string;
  readonly code: string;
  readonly networkName: string;
  readonly environment: string;
  readonly nodeClass: string;
  readonly websocket: boolean;
  readonly public: boolean;
  readonly chainId: number | undefined;
  /** The network says it has no chain id (`noChainId`). */
  readonly noChainId: boolean;
  readonly family: "jsonrpc" | "rest" | "mixed";
  readonly mounts: readonly RefMount[];
  readonly head: RawInterface["head"];
  readonly dedicatedOnly: readonly { name: string; paths: string[] }[];
  readonly blockTime: number;
}

export function readReference(file: string): RefEndpoint[] {
  // any number of aliases, as codegen reads the registry (codegen/load.ts)
  const registry = parse(readFileSync(file, "utf8"), { maxAliasCount: -1 }) as RawRegistry;
  return registry.networks.flatMap((network) => {
    const mounts = network.mounts.map((mount) => readMount(registry, mount));
    const ids = mounts.flatMap((m) => m.interfaces);
    const families = new Set(ids.map((id) => (registry.interfaces[id] as RawInterface).family));
    // The interface style: one family, or mixed when the network's interfaces differ in family
    // or one root serves several dialects.
    const family =
      families.size > 1 || mounts.some((m) => m.interfaces.length > 1)
        ? "mixed"
        : (families.values().next().value as "jsonrpc" | "rest");
    const head = network.head ?? (registry.interfaces[ids[0] as string] as RawInterface).head;
    return network.endpoints.map((endpoint) => ({
      label: endpoint.label,
      code: network.code,
      networkName: network.name,
      environment: endpoint.environment,
      nodeClass: endpoint.nodeClass,
      websocket: endpoint.websocket ?? false,
      public: endpoint.public ?? false,
      chainId: endpoint.chainId,
      noChainId: network.noChainId !== undefined,
      family,
      mounts,
      head,
      dedicatedOnly: network.dedicatedOnly ?? [],
      blockTime: network.blockTime,
    }));
  });
}

function readMount(registry: RawRegistry, mount: RawNetwork["mounts"][number]): RefMount {
  const ids = typeof mount.interface === "string" ? [mount.interface] : mount.interface;
  const interfaces = ids.map((id) => registry.interfaces[id] as RawInterface);
  const first = interfaces[0] as RawInterface;
  // The first interface on the mount that allows a method decides its access.
  const methods = new Map<string, Access>();
  for (const iface of interfaces)
    for (const group of METHOD_GROUPS)
      for (const name of iface.methods?.[group] ?? []) if (!methods.has(name)) methods.set(name, group);
  const routes = interfaces.flatMap((iface) =>
    ROUTE_GROUPS.flatMap((group) => (iface.routes?.[group] ?? []).map((text) => readRoute(text, group))),
  );
  const deniedRoutes = interfaces.flatMap((iface) =>
    (iface.routes?.deny ?? []).map((text) => readRoute(text, "shared")),
  );
  const envelope = first.envelope === undefined ? undefined : registry.envelopes[first.envelope];
  return {
    path: mount.path,
    interfaces: ids,
    family: first.family === "rest" ? "rest" : routes.length > 0 ? "mixed" : "jsonrpc",
    ...(envelope === undefined
      ? {}
      : {
          jsonrpc: {
            envelope: first.envelope as string,
            batch: envelope.batch,
            plainTextBody: envelope.plainTextBody === true,
            methods,
          },
        }),
    deniedMethods: interfaces.flatMap((iface) => iface.methods?.deny ?? []),
    routes,
    deniedRoutes,
    writeMethods: new Set(
      interfaces.flatMap((iface) => (iface.writes ?? []).filter((w) => !w.includes(" /"))),
    ),
    writeRoutes: interfaces.flatMap((iface) =>
      (iface.writes ?? []).filter((w) => w.includes(" /")).map((text) => readRoute(text, "shared")),
    ),
  };
}

function readRoute(text: string, access: RouteAccess): RefRoute {
  const [methods = "", path = ""] = text.split(" ");
  return { text, methods: methods.split("|"), segments: path.split("/").slice(1).filter(Boolean), access };
}

/** `admin_*`: `*` is any run of characters, the rest literal. */
export function deniedBy(pattern: string, name: string): boolean {
  const literal = pattern.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"));
  return new RegExp(`^${literal.join(".*")}$`).test(name);
}

export type RefAnswer =
  | { kind: "match"; access: RouteAccess; shape: string }
  | { kind: "method-not-allowed"; allow: string[] }
  | { kind: "not-found" };

const isParam = (s: string) => s.startsWith("{") && !s.endsWith("...}");
const isRest = (s: string) => s.endsWith("...}");

/**
 * What a mount answers to `method path`, by the routing rules of registry/README.md and
 * src/registry/match-route.ts: segment by segment, a literal in some template beats a `{param}` in
 * another at the same place, and that choice is final (so `GET /a/{x}` does not serve `/a/b` when
 * `GET /a/b/c` exists); a template that ends the path wins over a `{rest...}` met on the way, and of
 * those the last one met; a path that some template fits but not with this method is told the methods
 * that would fit.
 */
export function answerRoute(mount: RefMount, method: string, path: readonly string[]): RefAnswer {
  let live: readonly RefRoute[] = mount.routes;
  let wildcard: readonly RefRoute[] = [];
  for (const [i, segment] of path.entries()) {
    const rests = live.filter((r) => r.segments.length === i + 1 && isRest(r.segments[i] as string));
    if (rests.length > 0) wildcard = rests;
    const going = live.filter((r) => r.segments.length > i && !isRest(r.segments[i] as string));
    const literal = going.filter((r) => r.segments[i] === segment);
    live = literal.length > 0 ? literal : going.filter((r) => isParam(r.segments[i] as string));
  }
  const exact = live.filter((r) => r.segments.length === path.length);
  const serving = [...exact, ...wildcard].find((r) => r.methods.includes(method));
  if (serving !== undefined) return { kind: "match", access: serving.access, shape: shapeOf(serving) };
  if (exact.length === 0 && wildcard.length === 0) return { kind: "not-found" };
  return {
    kind: "method-not-allowed",
    allow: [...new Set([...exact, ...wildcard].flatMap((r) => r.methods))].sort(),
  };
}

/** The route's path with its parameters unnamed (`/v2/accounts/{}`, `/x/{...}`): what a metric names it by. */
function shapeOf(route: RefRoute): string {
  return `/${route.segments.map((s) => (isRest(s) ? "{...}" : isParam(s) ? "{}" : s)).join("/")}`;
}

/** A concrete path for a template: each `{param}` one sample segment, a `{rest...}` two. */
export function samplePath(route: RefRoute): string[] {
  return route.segments.flatMap((s) => (isRest(s) ? ["r0", "r1"] : isParam(s) ? ["p0"] : [s]));
}
