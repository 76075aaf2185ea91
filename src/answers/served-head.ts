import { Waiters } from "../upstream/waiters.js";

/**
 * How long a head other instances or workers served counts, in ms (answers/shared-heads.ts,
 * proxy/cluster-store.ts): a label whose head has not risen for this long (its nodes went, a test chain was
 * started again) stops holding the others back.
 */
export const SHARED_HEAD_KEEP_MS = 60_000;

/**
 * How long an answer that raised a label's head is held for the rise to reach the other instances
 * (shared-heads.ts), in ms: then it goes out anyway, so a Redis that is slow or away never stalls a caller.
 */
export const SHARE_HOLD_MS = 50;

/**
 * Epochs whose finality is kept: a read in flight across more head moves than this (every block a node
 * reports, every write moves it) judges its answer final by nothing.
 */
const KEPT_EPOCHS = 1024;

/** What stood as an epoch began. */
export interface EpochStart {
  readonly height: number;
  readonly finalized: number;
}

/**
 * The highest head a label has served: from the prober's readings of its nodes and from the answers its
 * callers got (docs/upstreams.md, "Answers across nodes"). A read at the head goes only to a node that has
 * reached it, so the head a caller sees never goes backwards, even when its calls land on different nodes.
 * Calls that find no node there yet wait here for one, for about one block.
 */
export class ServedHead {
  #height = -1;
  #epoch = 0;
  /** For each of the last epochs, by `epoch % KEPT_EPOCHS`: which epoch, its head, its finalized height. */
  readonly #epochs = new Float64Array(KEPT_EPOCHS).fill(-1);
  readonly #heights = new Float64Array(KEPT_EPOCHS);
  readonly #finals = new Float64Array(KEPT_EPOCHS);
  /** The label's finalized height now, read as each epoch begins (the group's). */
  finality: (() => number) | undefined = undefined;

  constructor() {
    this.#record();
  }
  #risenAt = 0;
  #blockMs: number | undefined = undefined;
  /** Calls waiting for a node at a head, by the head they wait for. */
  readonly #waiting = new Waiters<number>();
  /**
   * Told of every rise, to share it with other gateway instances (shared-heads.ts): a promise when the
   * others hear of it once it settles, whose answers are held until then (`sharing`).
   */
  onRise: ((height: number) => Promise<unknown> | undefined) | undefined = undefined;
  /** The longest an answer is held for a rise to reach the others (the deployment's `sharedLimits.headHoldMs`). */
  holdMs = SHARE_HOLD_MS;
  /** While a rise is on its way to the other instances: settles once they have it, or after `holdMs`. */
  #sharing: Promise<void> | undefined = undefined;
  /** Told when a call starts waiting for a node at `height`, to ask the nodes for theirs now (prober.ts). */
  onWait: ((height: number) => void) | undefined = undefined;

  /** The highest head served; -1 until one is known. */
  get height(): number {
    return this.#height;
  }

  /**
   * Counts the moves of the label's head: each rise, each settle, and each time a node's chain was seen
   * rewound. An answer kept while the head stays (src/cache/) is kept for one epoch.
   */
  get epoch(): number {
    return this.#epoch;
  }

  /**
   * The served head as `epoch` began and the label's finalized height while it lasted (undefined for one
   * long gone): what was final when a read of that epoch went out (src/cache/kept-answer.ts). Finality
   * learned during the epoch counts for all of it: a reorganisation that would make a block read in it
   * turn final from another chain moves the epoch first (the prober reads a node's head block before its
   * finalized one, label-finality.ts `blockSeen`), and finality is then learned in the next.
   */
  startOf(epoch: number): EpochStart | undefined {
    const at = epoch % KEPT_EPOCHS;
    if (this.#epochs[at] !== epoch) return undefined;
    return { height: this.#heights[at] as number, finalized: this.#finals[at] as number };
  }

  /** The label's finalized height rose in the current epoch. */
  finalizedNow(height: number): void {
    const at = this.#epoch % KEPT_EPOCHS;
    if (height > (this.#finals[at] as number)) this.#finals[at] = height;
  }

  #nextEpoch(): void {
    this.#epoch++;
    this.#record();
  }

  #record(): void {
    const at = this.#epoch % KEPT_EPOCHS;
    this.#epochs[at] = this.#epoch;
    this.#heights[at] = this.#height;
    this.#finals[at] = this.finality?.() ?? -1;
  }

  /**
   * The time between blocks as the label's head has risen, smoothed; undefined until two rises were seen.
   * The registry's block time is the network's; a dev chain or a slow network may differ (src/cache/).
   */
  get blockMs(): number | undefined {
    return this.#blockMs;
  }

  /**
   * A head was served or seen: the mark rises to it, never falls. `block`: the rise is a block the chain
   * made, timed for `blockMs`: a node's own head rose to it. A node read for the first time (the prober's
   * first round, a node back from failing) is not: two nodes a block apart, read a millisecond apart, would
   * make the label's blocks a millisecond long, and nothing read at its head would be kept (src/cache/)
   * until real blocks wore the figure down, an hour on a chain of 10-minute blocks.
   */
  raise(height: number, block = true): void {
    if (height <= this.#height) return;
    this.#timeRise(height, block);
    this.#height = height;
    this.#nextEpoch();
    const shared = this.onRise?.(height);
    if (shared !== undefined) this.#hold(shared);
  }

  /**
   * Settles once the last rise reached the other instances, or its hold ran out; undefined when none is on
   * its way. An answer read while it is (the one that raised the head, or another showing it) goes out
   * then: its caller's next call, to another instance, must not find that instance not yet told
   * (docs/upstreams.md, "Answers across nodes").
   */
  get sharing(): Promise<void> | undefined {
    return this.#sharing;
  }

  #hold(shared: Promise<unknown>): void {
    let timer: NodeJS.Timeout | undefined;
    const held: Promise<void> = Promise.race([
      shared.then(
        () => {},
        () => {},
      ),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.holdMs);
      }),
    ]).then(() => {
      clearTimeout(timer);
      if (this.#sharing === held) this.#sharing = undefined;
    });
    this.#sharing = held;
  }

  #timeRise(height: number, block: boolean): void {
    const now = performance.now();
    if (block && this.#height >= 0 && this.#risenAt > 0) {
      const sample = (now - this.#risenAt) / (height - this.#height);
      this.#blockMs = this.#blockMs === undefined ? sample : 0.8 * this.#blockMs + 0.2 * sample;
    }
    this.#risenAt = now;
  }

  /**
   * A node's head went back (a reorg, a rewound dev chain), or a block under the head may have been
   * replaced (src/upstream/label-finality.ts `blockSeen`): what was read at the head may be gone.
   */
  moved(): void {
    this.#nextEpoch();
  }

  /**
   * A read waited about a block for a node at the served head and none came (its node went, another
   * instance's chain was started again): the mark comes down to the best head a node in rotation has, or
   * every read at the head would wait a block from now on.
   */
  settle(bestHead: number): void {
    if (bestHead >= 0 && bestHead < this.#height) {
      this.#height = bestHead;
      this.#nextEpoch();
    }
  }

  /**
   * Another gateway instance served this head: the mark rises as if this one had. `block`: as `raise`'s; a
   * head read from Redis at a start is not a block.
   */
  raiseFromPeer(height: number, block = true): void {
    if (height <= this.#height) return;
    this.#timeRise(height, block);
    this.#height = height;
    this.#nextEpoch();
  }

  /** Calls back once a node has reached `height` (`nodeReached`), or after `timeoutMs`. */
  whenReached(height: number, timeoutMs: number, callback: () => void): void {
    this.#waiting.add(height, timeoutMs, callback);
    this.onWait?.(height);
  }

  /** A node in rotation is now at `height`: the calls waiting for a head up to it go on. */
  nodeReached(height: number): void {
    this.#waiting.release((wanted) => wanted <= height);
  }
}
