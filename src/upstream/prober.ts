import type { HealthConfig } from "../config/types.js";
import { createLogger, type Logger } from "../log.js";
import type { ChainCall, Endpoint, HeadCall } from "../registry/types.js";
import { describeFailure, failureKind } from "./failure.js";
import type { UpstreamGroup } from "./group.js";
import { readHeight } from "./head.js";
import { chainOf, headOf, isFailureStatus } from "./probe-call.js";
import { ask, read, valueAt, valueIn } from "./probe-send.js";
import {
  type ChainCheck,
  callName,
  chainCheck,
  type FinalityProbe,
  finalityDepthOf,
  finalityProbe,
  type HeadBlockProbe,
  headBlockProbe,
  type Probe,
  probedMount,
  probeOf,
} from "./probe-targets.js";
import { healthFor, type Upstream, type UpstreamTable } from "./upstreams.js";

interface ProbeTarget {
  readonly group: UpstreamGroup;
  readonly head: Probe<HeadCall>;
  readonly chain: ChainCheck | undefined;
  /** How a node names its finalized block, where the registry's cache rules say (src/cache/). */
  readonly finality: FinalityProbe | undefined;
  /** How a node's head block is read with its hash and parent's, to see a reorg (src/cache/). */
  readonly headBlock: HeadBlockProbe | undefined;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly chainIntervalMs: number;
}

/**
 * Probes every upstream with its interface's registry calls, each on its own timer: every
 * `probeIntervalMs` (per label) with ±20% jitter, so a label's probes do not line up, and with its own
 * short timeout (`probeTimeoutMs`).
 *
 * - Which chain a node is on (registry `chain`) is asked before its first head probe, then every
 *   `chainCheckIntervalMs`, and at every probe while it is on another: a node on another chain than its
 *   label's is `wrong-chain` and gets no call. A node that cannot say is not held against.
 * - A head probe answered records the head and its latency, and the group then settles each member's lag
 *   against the best head; an answer without a readable head leaves the head unknown. Evidence of failure
 *   (no connection, no answer in time, a 5xx, a 429, an error object) takes the node out of rotation.
 *
 * The prober alone brings a node back into rotation.
 */
/** The least time between two probes of a node ahead of its timer (#probeSoon): four a second at most. */
const SOON_GAP_MS = 250;

export class Prober {
  readonly #targets: ProbeTarget[] = [];
  /** Each upstream's next probe. */
  readonly #timers = new Map<Upstream, NodeJS.Timeout>();
  /** Upstreams being probed now. */
  readonly #inFlight = new Set<Upstream>();
  /** When each upstream was last probed ahead of its timer (#probeSoon), and for which height. */
  readonly #soonAt = new Map<Upstream, { readonly at: number; readonly height: number }>();
  /** When each upstream's head block was last read ahead of its timer (#readHeadBlockSoon). */
  readonly #headBlockSoonAt = new Map<Upstream, number>();
  /** When each upstream last said which chain it is on. */
  readonly #chainAnsweredAt = new Map<Upstream, number>();
  /**
   * Nodes last found on another chain, until they name their own: a failed probe in between makes such a
   * node `failing`, and its verdict must outlast that state, or its first good probes would bring it back
   * with the chain not asked again.
   */
  readonly #onAnotherChain = new Set<Upstream>();
  /** Upstreams that could not say which chain they are on, logged once each. */
  readonly #chainUnknown = new Set<Upstream>();
  /** Nodes whose head answer could not be read, told once until they show a head again. */
  readonly #headUnknown = new Set<Upstream>();
  #logger: Logger;
  #stopped = false;

  constructor(
    table: UpstreamTable,
    endpoints: ReadonlyMap<string, Endpoint>,
    health: HealthConfig,
    logger: Logger,
  ) {
    this.#logger = logger;
    for (const group of table.groups()) {
      const settings = healthFor(health, group.label);
      const endpoint = endpoints.get(group.label);
      const probed = endpoint === undefined ? undefined : probedMount(endpoint, group.mount);
      if (endpoint === undefined || probed === undefined || settings.probeIntervalMs <= 0) continue;
      this.#targets.push({
        group,
        head: probeOf(probed.head, probed.mount),
        chain: chainCheck(endpoint, probed.mount, group.mount === "*"),
        finality: finalityProbe(probed.mount),
        headBlock: headBlockProbe(probed.mount),
        intervalMs: settings.probeIntervalMs,
        timeoutMs: settings.probeTimeoutMs,
        chainIntervalMs: settings.chainCheckIntervalMs,
      });
      const target = this.#targets[this.#targets.length - 1] as ProbeTarget;
      group.chainChecked = target.chain !== undefined;
      group.finalityDepth = finalityDepthOf(probed.mount);
      group.served.onWait = (height) => this.#probeSoon(target, height);
      group.readHead = (member) => this.#readHeadNow(target, member);
      if (target.headBlock !== undefined)
        group.readHeadBlock = (member) => this.#readHeadBlockSoon(target, member);
    }
  }

  /** Probes every upstream once now, then on its timer. */
  start(): void {
    for (const target of this.#targets)
      for (const member of target.group.members) void this.#probe(target, member);
  }

  /** Stops probing; calls still waiting for a first verdict go on without one. */
  /**
   * Probes on without logging: a config a reload replaced keeps probing for its WebSockets, and the
   * current config's prober logs the same nodes' news (proxy/server.ts).
   */
  quiet(): void {
    this.#logger = createLogger("silent");
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    for (const target of this.#targets) target.group.releaseWaiting();
  }

  #schedule(target: ProbeTarget, member: Upstream): void {
    if (this.#stopped) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(member);
        void this.#probe(target, member);
      },
      target.intervalMs * (0.8 + 0.4 * Math.random()),
    );
    timer.unref();
    this.#timers.set(member, timer);
  }

  /**
   * A read waits for a head that none of the group's nodes in rotation was last seen at (another instance
   * served it, told through Redis; the node that served it left): they are asked now, not at their next
   * probe, up to an interval later, which every read at that head would wait for. Only nodes last seen
   * below it, each once per height, at most once in SOON_GAP_MS, never beside a probe of it in flight.
   */
  #probeSoon(target: ProbeTarget, height: number): void {
    if (this.#stopped) return;
    const now = performance.now();
    for (const member of target.group.members) {
      const { health } = member;
      if (!health.inRotation || (health.head ?? -1) >= height || this.#inFlight.has(member)) continue;
      // once per node for each height waited for: a head its nodes stay behind (another instance's faster
      // nodes) costs each node one more probe a block, not four a second
      const last = this.#soonAt.get(member);
      if (last !== undefined && (last.height >= height || now - last.at < SOON_GAP_MS)) continue;
      this.#soonAt.set(member, { at: now, height });
      clearTimeout(this.#timers.get(member));
      this.#timers.delete(member);
      void this.#probe(target, member);
    }
  }

  /**
   * A node's head block read now, out of its turn: a caller's answer showed the label a new head (group.ts
   * `readHeadBlock`). At most once in SOON_GAP_MS per node, and never beside a probe of it in flight, which
   * reads it anyway; a failure is left to the next probe to judge.
   */
  #readHeadBlockSoon(target: ProbeTarget, member: Upstream): void {
    if (this.#stopped || this.#inFlight.has(member) || !member.health.inRotation) return;
    const now = performance.now();
    const last = this.#headBlockSoonAt.get(member) ?? Number.NEGATIVE_INFINITY;
    if (now - last < SOON_GAP_MS) return;
    this.#headBlockSoonAt.set(member, now);
    this.#probeHeadBlock(target, member).catch(() => {});
  }

  /**
   * A node's head read now, out of its turn, for an answer that named a head block's hash the label had not
   * answered (src/answers/head-hash.ts): the label has served the head the node reads, as if the caller had
   * asked for it. A failure is the probe's as ever, and the answer goes out anyway.
   */
  async #readHeadNow(target: ProbeTarget, member: Upstream): Promise<void> {
    try {
      await this.#probeHead(target, member);
      const head = member.health.head;
      if (!this.#stopped && head !== undefined && member.health.inRotation)
        target.group.answeredHeight(member, head, true);
    } catch (failure) {
      const error = failure as Error;
      if (!this.#stopped) member.health.probeFailed(failureKind(error) ?? "reset", describeFailure(error));
    }
  }

  async #probe(target: ProbeTarget, member: Upstream): Promise<void> {
    this.#inFlight.add(member);
    try {
      if (this.#chainDue(target, member) && !(await this.#onItsChain(target, member))) return;
      await this.#probeHead(target, member);
    } catch (failure) {
      const error = failure as Error;
      if (!this.#stopped) member.health.probeFailed(failureKind(error) ?? "reset", describeFailure(error));
    } finally {
      this.#inFlight.delete(member);
      this.#schedule(target, member);
    }
  }

  #chainDue(target: ProbeTarget, member: Upstream): boolean {
    if (target.chain === undefined) return false;
    const { state } = member.health;
    // a node back from failing may have come back on another chain (a restart with another network's data)
    if (state === "checking" || state === "wrong-chain" || state === "failing") return true;
    if (this.#onAnotherChain.has(member)) return true;
    const answeredAt = this.#chainAnsweredAt.get(member);
    return answeredAt === undefined || Date.now() - answeredAt >= target.chainIntervalMs;
  }

  /** Asks which chain the node is on: false when it has failed or is on another chain. */
  async #onItsChain(target: ProbeTarget, member: Upstream): Promise<boolean> {
    const check = target.chain as ChainCheck;
    const answer = await ask(member, check.request, target.timeoutMs);
    if (this.#stopped) return false;
    const { statusCode } = answer;
    const reading = read(check.call, answer, check.errorMember);
    // An error object from a node that is otherwise up (a 2xx or 4xx: a method it does not serve) only
    // means it cannot say which chain it is on.
    if (reading.kind === "failed" && isFailureStatus(statusCode)) {
      member.health.probeFailed("status", `chain call: ${reading.detail}`);
      return false;
    }
    this.#chainAnsweredAt.set(member, Date.now());
    const chain = reading.kind === "value" ? chainOf(check.call, reading.value) : undefined;
    const { label } = target.group;
    if (chain === undefined) {
      if (!this.#chainUnknown.has(member)) {
        this.#chainUnknown.add(member);
        const answer =
          reading.kind === "value" ? JSON.stringify(reading.value)?.slice(0, 80) : reading.detail;
        this.#logger.log("warn", "upstream chain unknown", {
          label,
          upstream: member.name,
          call: callName(check.call),
          answer,
          expected: check.expected,
        });
      }
      // A node that cannot say is served; one found on another chain stays out until it names its own.
      if (!this.#onAnotherChain.has(member)) return true;
      member.health.wrongChain(
        `${callName(check.call)} could not say which chain it is on since it named another`,
      );
      return false;
    }
    if (chain === check.expected) {
      this.#onAnotherChain.delete(member);
      return true;
    }
    this.#onAnotherChain.add(member);
    member.health.wrongChain(
      `${callName(check.call)} answered chain "${chain}", but ${label} is chain "${check.expected}"`,
    );
    return false;
  }

  async #probeHead(target: ProbeTarget, member: Upstream): Promise<void> {
    const started = performance.now();
    const answer = await ask(member, target.head.request, target.timeoutMs);
    if (this.#stopped) return;
    const latencyMs = performance.now() - started;
    const reading = read(target.head.call, answer, target.head.errorMember);
    if (reading.kind === "failed") {
      member.health.probeFailed("status", reading.detail);
      return;
    }
    const head =
      reading.kind === "value" ? headOf(target.head.call, reading.value) : { problem: reading.detail };
    if ("problem" in head) {
      member.health.headUnknown(head.problem, latencyMs);
      this.#headUnknownOnce(target, member, head.problem);
    } else {
      this.#headUnknown.delete(member);
      const before = member.health.head;
      // its chain went back under it (a reorg, a dev chain reverted): what was read at the head may be gone
      if (before !== undefined && head.height < before) target.group.finality.wentBack(member, head.height);
      member.health.probed(head.height, latencyMs);
    }
    target.group.judgeProbe(member);
    if (!member.health.inRotation) return;
    if (target.headBlock !== undefined) await this.#probeHeadBlock(target, member);
    if (target.finality !== undefined) await this.#probeFinality(target, member);
  }

  /**
   * A node that answers its head call with no head the registry's field and encoding read stays in rotation
   * (evidence, not doubt), but the label then has no head to hold its answers to: one warn line says so,
   * until it reads a head again. A registry `head` with a wrong field or encoding shows here first.
   */
  #headUnknownOnce(target: ProbeTarget, member: Upstream, problem: string): void {
    if (this.#headUnknown.has(member)) return;
    this.#headUnknown.add(member);
    this.#logger.log("warn", "upstream head unknown", {
      label: target.group.label,
      upstream: member.name,
      call: callName(target.head.call),
      problem,
    });
  }

  /** Reads a node's head block with its hash and its parent's: the group sees a block replaced under it. */
  async #probeHeadBlock(target: ProbeTarget, member: Upstream): Promise<void> {
    const { probe, rule, headerBy } = target.headBlock as NonNullable<ProbeTarget["headBlock"]>;
    const answer = await ask(member, probe.request, target.timeoutMs);
    if (this.#stopped) return;
    const reading = read(probe.call, answer, probe.errorMember);
    if (reading.kind !== "value") return;
    const hash = valueAt(reading.value, rule.hash);
    let header = reading.value;
    if (headerBy !== undefined) {
      // a header that holds no hash of its own: the block the first answer named, read by that hash
      if (typeof hash !== "string" || hash === "") return;
      const second = headerBy(hash);
      const secondAnswer = await ask(member, second.request, target.timeoutMs);
      if (this.#stopped) return;
      const secondReading = read(second.call, secondAnswer, second.errorMember);
      if (secondReading.kind !== "value") return;
      header = secondReading.value;
    }
    const height = readHeight(valueAt(header, rule.number), rule.encoding);
    const parent = valueAt(header, rule.parent);
    if (height !== undefined && typeof hash === "string" && typeof parent === "string")
      target.group.finality.blockSeen(member, height, hash, parent);
  }

  /** Asks a node in rotation for its finalized block: the group's finalized height rises to it. */
  async #probeFinality(target: ProbeTarget, member: Upstream): Promise<void> {
    const { first, heightBy, hash: hashAt } = target.finality as FinalityProbe;
    const answer = await ask(member, first.request, target.timeoutMs);
    if (this.#stopped) return;
    let value = valueIn(first, answer);
    let hash = hashAt === undefined ? undefined : valueIn(hashAt, answer);
    let call: ChainCall = first.call;
    if (heightBy !== undefined) {
      // a block named by a hash: no hash (a node's null) is no finalized block, and chain_getHeader
      // sent null would answer the best block's header
      if (typeof value !== "string" || value === "") return;
      hash = value;
      const second = heightBy(value);
      const secondAnswer = await ask(member, second.request, target.timeoutMs);
      if (this.#stopped) return;
      value = valueIn(second, secondAnswer);
      call = second.call;
    }
    if (value === undefined || call.encoding === undefined) return;
    const height = headOf({ ...call, encoding: call.encoding }, value);
    if (!("problem" in height))
      target.group.finality.finalizedSeen(height.height, typeof hash === "string" ? hash : undefined, member);
  }
}
