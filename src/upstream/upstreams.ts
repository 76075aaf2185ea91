import type { Dispatcher } from "undici";
import { AnswerCounts } from "../answers/answer-counts.js";
import { ServedHead } from "../answers/served-head.js";
import type { GatewayConfig, HealthConfig, LabelUpstreams, Limits, UpstreamSpec } from "../config/types.js";
import { upstreamName } from "../config/upstream-name.js";
import type { Endpoint } from "../registry/types.js";
import { type HealthRules, UpstreamHealth, type UpstreamState } from "./health.js";
import { type Dispatch, intercepted, responseCap } from "./interceptors.js";
import { Waiters } from "./waiters.js";

/** One upstream node of a group: where to send, what to add to every request, and its health. */
export class Upstream {
  /** The operator's name for it, else its origin and base path without credentials: safe to log. */
  readonly name: string;
  /**
   * How the metrics name it: the operator's name, else its place in its list (`upstream-0`), since a
   * metric's label carries no host or address.
   */
  readonly metricName: string;
  readonly dispatcher: Dispatcher;
  /** Its dispatcher's dispatch through the upstream interceptors (interceptors.ts): every call goes here. */
  readonly dispatch: Dispatch;
  readonly basePath: string;
  readonly baseQuery: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Whether `headers` has any, so requests without them skip a merge. */
  readonly hasHeaders: boolean;
  /** Where the node takes WebSocket connections. */
  readonly wsUrl: string;
  /** Fallbacks serve only while no primary is in rotation. */
  readonly tier: "primary" | "fallback";
  /** Its share of traffic against the other members of its tier, all else equal. */
  readonly weight: number;
  readonly health: UpstreamHealth;
  /** Smooth weighted round robin's running weight (`UpstreamGroup.choose`). */
  current = 0;

  constructor(fields: Omit<Upstream, "current" | "effectiveWeight" | "dispatch">) {
    this.name = fields.name;
    this.metricName = fields.metricName;
    this.dispatcher = fields.dispatcher;
    this.dispatch = intercepted(fields.dispatcher, responseCap);
    this.basePath = fields.basePath;
    this.baseQuery = fields.baseQuery;
    this.headers = fields.headers;
    this.hasHeaders = fields.hasHeaders;
    this.wsUrl = fields.wsUrl;
    this.tier = fields.tier;
    this.weight = fields.weight;
    this.health = fields.health;
  }

  /**
   * Its weight as things stand: the configured weight, divided by what makes it worse to send to now
   * (its latency, its calls in flight, its error rate, its lag). A node that starts to hang sees its
   * calls in flight grow and its share fall before it is taken out. Latency counts from 10 ms: below
   * that, between nodes on one network, differences are noise, not a better node.
   */
  effectiveWeight(): number {
    const { health } = this;
    return (
      this.weight /
      (Math.max(10, health.latencyMs) *
        (1 + health.inFlight) *
        (1 + 10 * health.errorRate) *
        (1 + health.lagBlocks))
    );
  }
}

const NONE: readonly Upstream[] = [];
/** The longest a read waits for a node at the served head, whatever the block time: a slow chain's block is minutes. */
const HEAD_WAIT_CAP_MS = 3_000;

/** The upstreams of one label and mount. */
export class UpstreamGroup {
  readonly label: string;
  /** The registry mount the group serves, or "*" for the label's endpoint-wide list. */
  readonly mount: string;
  readonly members: readonly Upstream[];
  /** Blocks a member may fall behind the best head before it is lagging. */
  readonly maxLagBlocks: number;
  /** How long a read waits for a node to reach the head the label served: about one block. */
  readonly headWaitMs: number;
  /** The highest head the label has served (src/answers/served-head.ts). */
  readonly served = new ServedHead();
  /** What the answer rules did on this group, for the metrics (src/answers/answer-counts.ts). */
  readonly answers = new AnswerCounts();
  /** Calls waiting for the prober's first verdicts. */
  readonly #waiting = new Waiters<undefined>();

  constructor(
    label: string,
    mount: string,
    members: readonly Upstream[],
    maxLagBlocks: number,
    headWaitMs = 0,
  ) {
    this.label = label;
    this.mount = mount;
    this.members = members;
    this.maxLagBlocks = maxLagBlocks;
    this.headWaitMs = headWaitMs;
  }

  /**
   * The upstreams to try for one call, best first: the in-rotation primaries, the first of them chosen by
   * smooth weighted round robin over their effective weights (nginx's algorithm: deterministic, and it
   * spreads calls in proportion); then the in-rotation fallbacks. Only when nothing is in rotation, the
   * least bad (`#lastResort`): a stale or slow answer is better than none, but never better than a fresh
   * one, so no hedge or retry reaches such a node while a node is in rotation. Empty means there is none
   * to try: the caller answers NO_UPSTREAM with `whyNone()`.
   *
   * A read that needs a block (`atLeast`, from src/answers/) goes only to members that have reached it;
   * when members are in rotation and none has, the list is empty and `behind(atLeast)` is true, and the
   * caller waits for one (`served.whenReached`) before it takes `highestFirst`.
   */
  choose(write = false, atLeast = -1, exclude?: Upstream): readonly Upstream[] {
    if (this.members.length === 1) {
      const only = this.members[0] as Upstream;
      if (only === exclude) return NONE;
      return only.health.inRotation ? this.members : this.#lastResort(write);
    }
    // One array for the call: the in-rotation primaries, then the in-rotation fallbacks.
    const order: Upstream[] = [];
    let inRotation = 0;
    for (const member of this.members) {
      if (!member.health.inRotation || member === exclude) continue;
      inRotation++;
      if (member.tier === "primary" && reached(member, atLeast)) order.push(member);
    }
    const primaries = order.length;
    for (const member of this.members) {
      if (
        member.health.inRotation &&
        member !== exclude &&
        member.tier !== "primary" &&
        reached(member, atLeast)
      )
        order.push(member);
    }
    if (order.length === 0) return inRotation === 0 ? this.#lastResort(write) : NONE;
    const at = pickSmoothly(order, primaries > 0 ? primaries : order.length);
    if (at > 0) {
      const chosen = order[at] as Upstream;
      order.copyWithin(1, 0, at);
      order[0] = chosen;
    }
    return order;
  }

  /** Whether members are in rotation but none has reached `atLeast`: a read may wait for one. */
  behind(atLeast: number): boolean {
    return (
      atLeast >= 0 &&
      this.members.some((m) => m.health.inRotation) &&
      !this.members.some((m) => m.health.inRotation && reached(m, atLeast))
    );
  }

  /**
   * After a read waited for a head in vain: the members in rotation, the highest head first. The served
   * head comes down to the highest they have (served-head.ts `settle`).
   */
  highestFirst(write = false): readonly Upstream[] {
    const order = this.members.filter((m) => m.health.inRotation);
    if (order.length === 0) return this.#lastResort(write);
    order.sort((a, b) => (b.health.head ?? -1) - (a.health.head ?? -1));
    this.served.settle(order[0]?.health.head ?? -1);
    return order;
  }

  /**
   * An answer from `upstream` showed a height (src/answers/): the label has served it, and that node has
   * it (`isHead`: it is that node's head). Calls waiting for a node at that head go on.
   */
  answeredHeight(upstream: Upstream, height: number, isHead: boolean): void {
    upstream.health.answeredHeight(height, isHead);
    this.served.raise(height);
    if (upstream.health.inRotation) this.served.nodeReached(height);
  }

  /**
   * When no member is in rotation: reads go to the least bad node, lagging ones least behind first, then
   * failing ones that still take connections, fewest errors first, then those whose last connection
   * could not be made. When every candidate's last connection could not be made, none: an attempt would
   * only fail the same way, so the caller hears NO_UPSTREAM at once. A write goes to a lagging node only:
   * sent to a node that is failing, it would most likely end WRITE_NOT_CONFIRMED, with no way to send it
   * elsewhere. Nodes being checked, on another chain or cordoned never get a call.
   */
  #lastResort(write: boolean): readonly Upstream[] {
    const lagging: Upstream[] = [];
    const failing: Upstream[] = [];
    const unreachable: Upstream[] = [];
    for (const member of this.members) {
      const { health } = member;
      if (!health.usableAsLastResort) continue;
      if (health.state === "lagging") lagging.push(member);
      else if (!write) (health.unreachable ? unreachable : failing).push(member);
    }
    if (lagging.length === 0 && failing.length === 0) return NONE;
    lagging.sort((a, b) => a.health.lagBlocks - b.health.lagBlocks);
    failing.sort(
      (a, b) => a.health.errorRate - b.health.errorRate || a.health.latencyMs - b.health.latencyMs,
    );
    return [...lagging, ...failing, ...unreachable];
  }

  /** Whether a member is still being checked by the prober: it gets its first verdict within a probe. */
  get checking(): boolean {
    return this.members.some((member) => member.health.state === "checking");
  }

  /**
   * Calls back once a member being checked has its first verdict, or after `timeoutMs`: a call that
   * arrives as the gateway starts waits for the prober rather than failing, since no node may get a call
   * before the prober knows which chain it is on.
   */
  whenChecked(timeoutMs: number, callback: () => void): void {
    this.#waiting.add(undefined, timeoutMs, callback);
  }

  /**
   * A member's state changed. Calls waiting for the prober's first verdicts go on once a node is in
   * rotation, or once every node has its verdict (they then take the least bad, or none).
   */
  stateChanged(from: UpstreamState): void {
    if (from !== "checking" || this.#waiting.size === 0) return;
    if (this.members.some((m) => m.health.inRotation) || !this.checking) this.releaseWaiting();
  }

  /** Every call waiting for the prober goes on, with what the group has now. */
  releaseWaiting(): void {
    this.#waiting.release();
  }

  /** Why `choose` found no node, for the NO_UPSTREAM a caller gets. */
  whyNone(write: boolean): string {
    const states = new Set(this.members.map((member) => member.health.state));
    if (states.has("checking")) return "the upstreams of this network are still being checked";
    const candidates = this.members.filter((member) => member.health.usableAsLastResort);
    if (candidates.length > 0 && candidates.every((member) => member.health.unreachable))
      return "no upstream of this network takes connections";
    if (write && states.has("failing")) return "every upstream of this network that takes writes is failing";
    return "every upstream of this network is out of rotation";
  }

  /**
   * After `probed`'s good probe: its lag against the best head of the members that are not failing (and
   * its own), which counts towards its coming back; the others' lag against that best head, which does not.
   */
  judgeProbe(probed: Upstream): void {
    let best = probed.health.head ?? Number.NEGATIVE_INFINITY;
    for (const member of this.members) {
      const { health } = member;
      if (health.headCounts && (health.head as number) > best) best = health.head as number;
    }
    probed.health.judgeProbe(best, this.maxLagBlocks);
    for (const member of this.members) {
      if (member !== probed && member.health.headCounts && member.health.state !== "checking")
        member.health.judgeLag(best, this.maxLagBlocks);
    }
    const head = probed.health.head;
    if (head !== undefined && probed.health.inRotation) {
      this.served.raise(head);
      this.served.nodeReached(head);
    }
  }
}

/** Whether a member has reached a block: one whose head is not known yet is given the benefit of the doubt. */
function reached(member: Upstream, atLeast: number): boolean {
  const head = member.health.head;
  return atLeast < 0 || head === undefined || head >= atLeast;
}

/** The index, below `end`, of the candidate whose turn it is; `current` carries each one's running weight. */
function pickSmoothly(candidates: readonly Upstream[], end: number): number {
  if (end <= 1) return 0;
  let total = 0;
  let chosen = 0;
  for (let at = 0; at < end; at++) {
    const candidate = candidates[at] as Upstream;
    const weight = candidate.effectiveWeight();
    candidate.current += weight;
    total += weight;
    if (candidate.current > (candidates[chosen] as Upstream).current) chosen = at;
  }
  (candidates[chosen] as Upstream).current -= total;
  return chosen;
}

/** How upstream connections are made: upstream/policy.ts's poolPerOrigin, or a test's MockAgent. */
export type DispatcherFactory = (origin: string, limits: Limits["upstream"]) => Dispatcher;

/** Told of every state change, for the log (and the operator's view). */
export type StateChange = (
  group: UpstreamGroup,
  upstream: Upstream,
  from: UpstreamState,
  to: UpstreamState,
  reason: string,
) => void;

/** The deployment's label → mount → upstream table, built once at start. */
export class UpstreamTable {
  /** Label, then mount path ("*" for the label's endpoint-wide list): no key string is built per request. */
  readonly #groups = new Map<string, Map<string, UpstreamGroup>>();
  readonly #dispatchers = new Map<string, Dispatcher>();

  constructor(
    config: Pick<GatewayConfig, "upstreams" | "limits" | "health">,
    endpoints: ReadonlyMap<string, Endpoint>,
    factory: DispatcherFactory,
    onStateChange: StateChange,
  ) {
    for (const [label, upstreams] of Object.entries(config.upstreams)) {
      const health = healthFor(config.health, label);
      const maxLagBlocks = lagThreshold(health, endpoints.get(label));
      // about one block: a read waits that long for a node at the head the label served
      const headWaitMs = Math.min(HEAD_WAIT_CAP_MS, (endpoints.get(label)?.blockTimeSeconds ?? 0) * 1000);
      for (const [mount, specs] of byMount(upstreams)) {
        if (specs.length === 0) continue;
        const members: Upstream[] = [];
        const group = new UpstreamGroup(label, mount, members, maxLagBlocks, headWaitMs);
        for (const [index, spec] of specs.entries()) {
          const rules = { ...health, takeOut: health.probeIntervalMs > 0 };
          const upstream = this.#upstream(
            spec,
            index,
            factory,
            config.limits.upstream,
            rules,
            (from, to, reason) => {
              onStateChange(group, upstream, from, to, reason);
              group.stateChanged(from);
            },
          );
          members.push(upstream);
        }
        const mounts = this.#groups.get(label) ?? new Map<string, UpstreamGroup>();
        this.#groups.set(label, mounts.set(mount, group));
      }
    }
  }

  /** The group for a label's mount, falling back to the label's endpoint-wide list. */
  group(label: string, mountPath: string): UpstreamGroup | undefined {
    const mounts = this.#groups.get(label);
    return mounts?.get(mountPath) ?? mounts?.get("*");
  }

  /** Every group, for the prober and the operator's view. */
  groups(): UpstreamGroup[] {
    return [...this.#groups.values()].flatMap((mounts) => [...mounts.values()]);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#dispatchers.values()].map((d) => d.close()));
  }

  #upstream(
    spec: string | UpstreamSpec,
    index: number,
    factory: DispatcherFactory,
    limits: Limits["upstream"],
    rules: HealthRules,
    listener: (from: UpstreamState, to: UpstreamState, reason: string) => void,
  ): Upstream {
    const {
      url,
      headers = {},
      ws,
      name,
      tier = "primary",
      weight = 1,
    } = typeof spec === "string" ? { url: spec } : spec;
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
    return new Upstream({
      name: name ?? upstreamName(spec),
      metricName: name ?? `upstream-${index}`,
      dispatcher,
      basePath,
      baseQuery: parsed.search.slice(1),
      headers: extra,
      hasHeaders: Object.keys(extra).length > 0,
      wsUrl:
        ws ??
        `${parsed.protocol === "https:" ? "wss:" : "ws:"}//${parsed.host}${parsed.pathname}${parsed.search}`,
      tier,
      weight,
      // With a prober, a node gets no call before its first probe says which chain it is on.
      health: new UpstreamHealth(rules, listener, rules.takeOut ? "checking" : "healthy"),
    });
  }
}

/** The health settings of one label: the defaults, with the label's own overrides. */
export function healthFor(health: HealthConfig, label: string): Omit<HealthConfig, "labels"> {
  return { ...health, ...health.labels[label] };
}

/**
 * Blocks a node may be behind before it is lagging: more than `maxLagBlocks` and more than
 * `maxLagSeconds` of the network's blocks (registry `blockTime`), so a fast chain is judged in time and a
 * slow one is not judged lagging for the moment between two nodes seeing a new block.
 */
function lagThreshold(health: Omit<HealthConfig, "labels">, endpoint: Endpoint | undefined): number {
  const blockTime = endpoint?.blockTimeSeconds ?? 0;
  const bySeconds = blockTime > 0 ? Math.ceil(health.maxLagSeconds / blockTime) : 0;
  return Math.max(health.maxLagBlocks, bySeconds);
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
