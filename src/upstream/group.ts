import { AnswerCounts } from "../answers/answer-counts.js";
import { ServedHead } from "../answers/served-head.js";
import type { AnswerCache, Caller } from "../cache/answer-cache.js";
import type { UpstreamState } from "./health.js";
import { LabelFinality } from "./label-finality.js";
import { NodeStates } from "./node-states.js";
import type { Upstream } from "./upstreams.js";
import { Waiters } from "./waiters.js";
import { WriterNodes } from "./writer-nodes.js";

const NONE: readonly Upstream[] = [];

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
  /** The node that took each caller's last write: its next calls go there first (writer-nodes.ts). */
  readonly writers = new WriterNodes();
  /** What its nodes said of its blocks' finality, and the hashes of its recent head blocks (label-finality.ts). */
  readonly finality = new LabelFinality(this);
  /** The states its nodes made for callers (filters), each on its node and its caller's alone (node-states.ts). */
  readonly states = new NodeStates(() => this.members);
  /** The answers it keeps (src/cache/), when the label's cache is on. */
  cache: AnswerCache | undefined = undefined;
  /** Whether its prober asks its nodes which chain they are on (prober.ts): a node on another is kept out. */
  chainChecked = false;
  /**
   * Where the registry's finality is a depth below the served head (`reads.cache.finalized: {depth}`,
   * 6 on a proof-of-work chain), that depth, set by the prober: no node names a finalized block to learn one from.
   */
  finalityDepth: number | undefined = undefined;
  /**
   * Reads a node's head now and tells the label it served it, set by the prober: what an answer naming a
   * new head block's hash waits for (src/answers/head-hash.ts). Never rejects.
   */
  readHead: ((member: Upstream) => Promise<void>) | undefined = undefined;
  /**
   * Reads a node's head block now, set by the prober where the registry names a head-block call
   * (`reads.cache.headBlock`): a caller's answer raised the label's head, and the first sight of that
   * height's block moves the head epoch once more (label-finality.ts `blockSeen`), which ends whatever was
   * kept at the head meanwhile. Read at once, the move comes before much is kept; left to the next probe,
   * every head read kept in between reached the nodes twice in the block.
   */
  readHeadBlock: ((member: Upstream) => void) | undefined = undefined;
  /** The last head block's hash the label answered (registry `headHashes`), and the head read it waits for. */
  headHash: { readonly hash: string; readonly read: Promise<void> } | undefined = undefined;
  /** The last head change a node pushed on the label with no height (`headChanged`). */
  #headChange: string | undefined;
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
    this.served.finality = () => this.finalized;
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
      if (!only.health.inRotation) return this.#lastResort(write);
      // as below: a read that needs a block its one node has not reached waits for it (`behind`)
      return reached(only, atLeast) ? this.members : NONE;
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
      // by hand: V8's copyWithin takes its generic path, 60 ns for two members against 17
      for (let i = at; i > 0; i--) order[i] = order[i - 1] as Upstream;
      order[0] = chosen;
    }
    return order;
  }

  /**
   * A caller's write was answered, over either transport: a caller reads its own write, so what was read
   * at the head before it dies (the epoch moves), and the writer's own next reads there skip the cache
   * a while (`AnswerCache.wroteBy`).
   */
  wrote(caller: Caller): void {
    this.served.moved();
    this.cache?.wroteBy(caller);
  }

  /**
   * A node pushed what its head block is now, with no height to show the change (registry `headChanges`: a
   * Substrate runtime version, pushed when the best block's runtime changed). One other than the last pushed
   * on the label (any node's, any connection's) means what was read at the head may be another runtime's
   * (its metadata), so those answers die as after a write: the epoch moves. The same one again, as each
   * new subscription's first notification is, leaves them.
   */
  headChanged(value: string): void {
    if (value === this.#headChange) return;
    this.#headChange = value;
    this.served.moved();
  }

  /** The label's finalized height (label-finality.ts); -1 if none is known. */
  get finalized(): number {
    return this.finality.finalized;
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
   * Whether a WebSocket connection on `member` would be better on another of the label's nodes: `member` is
   * out of rotation while another is in, or is a fallback while a primary is in rotation (a fallback serves
   * while none is).
   */
  betterThan(member: Upstream): boolean {
    if (member.health.inRotation) return member.tier !== "primary" && this.#primaryInRotation();
    return this.members.some((m) => m !== member && m.health.inRotation);
  }

  /**
   * Calls back once `member` has reached the head the label served, or after about one block
   * (`headWaitMs`), as a read at the head waits for a node over HTTP: a WebSocket connection that moved to
   * a node behind that head sends its calls there only then, so its caller, who saw that head on the node
   * it left, does not see the head go back.
   */
  whenCaughtUp(member: Upstream, callback: () => void): void {
    const height = this.served.height;
    const deadline = performance.now() + this.headWaitMs;
    const check = (): void => {
      const left = deadline - performance.now();
      // woken by any node reaching the height: waits again until this one has, or the time is up
      if (reached(member, height) || left <= 0) callback();
      else this.served.whenReached(height, left, check);
    };
    check();
  }

  /** Whether a primary is in rotation: then a fallback's head is not the label's. */
  #primaryInRotation(): boolean {
    return this.members.some((m) => m.tier === "primary" && m.health.inRotation);
  }

  /**
   * A new WebSocket connection's nodes, best first. A connection keeps its node for its life: primaries
   * before fallbacks (a fallback serves while no primary is in rotation), in each tier those that have
   * reached the head the label served first, in the choice's turn, so that what the connection reads first
   * is not behind what the caller read over HTTP; then the others, the highest first, to try when a
   * node's socket does not open; then the lagging ones, least behind first: a connection on a node a few
   * blocks behind, which moves once a better one is in rotation, beats one closed because the node it was
   * on died a probe before the prober saw it. A handshake does not wait a block for a node to reach the head.
   */
  forConnection(): readonly Upstream[] {
    const chosen = this.choose();
    // none in rotation: the least bad first, as for a read (#lastResort), whatever their heads
    if (!chosen.some((m) => m.health.inRotation)) return chosen;
    const head = this.served.height;
    const rank = (m: Upstream) => (m.tier === "primary" ? 0 : 2) + (reached(m, head) ? 0 : 1);
    // a stable sort: equals keep the choice's order
    const order = [...chosen].sort(
      (a, b) => rank(a) - rank(b) || (reached(a, head) ? 0 : (b.health.head ?? -1) - (a.health.head ?? -1)),
    );
    // #lastResort's choice for a write: the lagging nodes alone, which answer (a failing one may not)
    for (const member of this.#lastResort(true)) if (!order.includes(member)) order.push(member);
    return order;
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
    // a caller's head poll may see a chain go back before a probe does, and the probe then reads against
    // the lowered head: the head's answers (and, under the finalized height, the final ones) go now
    const before = upstream.health.head;
    if (isHead && before !== undefined && height < before) this.finality.wentBack(upstream, height);
    upstream.health.answeredHeight(height, isHead);
    const served = this.served.height;
    this.served.raise(height, upstream.health.rose);
    if (upstream.health.inRotation) this.served.nodeReached(height);
    if (this.served.height > served && served >= 0) this.readHeadBlock?.(upstream);
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
    if (states.size === 1 && states.has("wrong-chain"))
      return "every upstream of this network is on another chain than the network's";
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
      if (member === probed || member.health.state === "checking") continue;
      if (member.health.headCounts) member.health.judgeLag(best, this.maxLagBlocks);
      // a failing node's head is its last known one: its lag grows as the others move on
      else member.health.noteLag(best);
    }
    const head = probed.health.head;
    if (head !== undefined && probed.health.inRotation) {
      // a fallback's head is not the label's while a primary is in rotation: a provider a block ahead
      // would hold every read at the head for itself (the reads go to a node at the served head)
      if (probed.tier === "primary" || !this.#primaryInRotation())
        this.served.raise(head, probed.health.rose);
      this.served.nodeReached(head);
    }
  }
}

/** Whether a member has reached a block: one whose head is not known yet is given the benefit of the doubt. */
export function reached(member: Upstream, atLeast: number): boolean {
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
