import type { Dispatcher } from "undici";
import type { GatewayConfig, LabelUpstreams, Limits, UpstreamSpec } from "../config/types.js";

/** One upstream node: where to send, and what to add to every request. */
export interface Upstream {
  /** Origin and base path without credentials: safe to log. */
  readonly name: string;
  readonly dispatcher: Dispatcher;
  readonly basePath: string;
  readonly baseQuery: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Whether `headers` has any, so requests without them skip a merge. */
  readonly hasHeaders: boolean;
  /** Where the node takes WebSocket connections. */
  readonly wsUrl: string;
}

/** The upstreams of one label and mount, taken in turn. */
export class UpstreamGroup {
  readonly members: readonly Upstream[];
  #next = 0;

  constructor(members: readonly Upstream[]) {
    this.members = members;
  }

  /** Members in the order to try them for one request: the next in turn first, then the others. */
  order(): readonly Upstream[] {
    if (this.members.length === 1) return this.members;
    const start = this.#next;
    this.#next = (start + 1) % this.members.length;
    return this.members.slice(start).concat(this.members.slice(0, start));
  }
}

/** How upstream connections are made: upstream/policy.ts's poolPerOrigin, or a test's MockAgent. */
export type DispatcherFactory = (origin: string, limits: Limits["upstream"]) => Dispatcher;

/** The deployment's label → mount → upstream table, built once at start. */
export class UpstreamTable {
  /** Label, then mount path ("*" for the label's endpoint-wide list): no key string is built per request. */
  readonly #groups = new Map<string, Map<string, UpstreamGroup>>();
  readonly #dispatchers = new Map<string, Dispatcher>();

  constructor(config: Pick<GatewayConfig, "upstreams" | "limits">, factory: DispatcherFactory) {
    for (const [label, upstreams] of Object.entries(config.upstreams)) {
      for (const [mount, specs] of byMount(upstreams)) {
        const members = specs.map((spec) => this.#upstream(spec, factory, config.limits.upstream));
        if (members.length === 0) continue;
        const mounts = this.#groups.get(label) ?? new Map<string, UpstreamGroup>();
        this.#groups.set(label, mounts.set(mount, new UpstreamGroup(members)));
      }
    }
  }

  /** The group for a label's mount, falling back to the label's endpoint-wide list. */
  group(label: string, mountPath: string): UpstreamGroup | undefined {
    const mounts = this.#groups.get(label);
    return mounts?.get(mountPath) ?? mounts?.get("*");
  }

  async close(): Promise<void> {
    await Promise.all([...this.#dispatchers.values()].map((d) => d.close()));
  }

  #upstream(spec: string | UpstreamSpec, factory: DispatcherFactory, limits: Limits["upstream"]): Upstream {
    const { url, headers = {}, ws } = typeof spec === "string" ? { url: spec, ws: undefined } : spec;
    const parsed = new URL(url);
    const extra: Record<string, string> = { ...headers };
    if (parsed.username !== "" || parsed.password !== "") {
      const user = decodeURIComponent(parsed.username);
      const pass = decodeURIComponent(parsed.password);
      extra.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
    }
    let dispatcher = this.#dispatchers.get(parsed.origin);
    if (dispatcher === undefined) {
      dispatcher = factory(parsed.origin, limits);
      this.#dispatchers.set(parsed.origin, dispatcher);
    }
    const basePath = parsed.pathname.replace(/\/+$/, "");
    return {
      name: `${parsed.origin}${basePath}`,
      dispatcher,
      basePath,
      baseQuery: parsed.search.slice(1),
      headers: extra,
      hasHeaders: Object.keys(extra).length > 0,
      wsUrl:
        ws ??
        `${parsed.protocol === "https:" ? "wss:" : "ws:"}//${parsed.host}${parsed.pathname}${parsed.search}`,
    };
  }
}

function byMount(upstreams: LabelUpstreams): [string, readonly (string | UpstreamSpec)[]][] {
  if (Array.isArray(upstreams)) return [["*", upstreams]];
  return Object.entries(upstreams as Record<string, readonly (string | UpstreamSpec)[]>);
}

/** The upstream path: its base path, then the caller's path after the key, then both queries. */
export function upstreamPath(upstream: Upstream, path: string, query: string): string {
  const base = path === "/" && upstream.basePath !== "" ? upstream.basePath : `${upstream.basePath}${path}`;
  if (upstream.baseQuery === "") return `${base}${query}`;
  return query === "" ? `${base}?${upstream.baseQuery}` : `${base}?${upstream.baseQuery}&${query.slice(1)}`;
}
