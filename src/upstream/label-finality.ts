import { sharedScope } from "../cache/shared-answers.js";
import { reached, type UpstreamGroup } from "./group.js";
import type { Upstream } from "./upstreams.js";

/** Heights below the newest head whose block hash the label remembers. */
const KEPT_HASHES = 128;
/** The finalized blocks whose hashes are kept: the last readings, at a height each (a head that stays reads one). */
const FINAL_HASHES = 32;

/**
 * What a label's nodes said of its blocks: the finalized height, the label's (never falling) and each
 * node's own, and the hashes seen at recent head heights and at finalized ones. A head block replaced
 * under the label (a reorg) ends what was read at the head (`blockSeen`); final blocks rewritten (a chain
 * reverted, or reorganised by hand) end everything kept for the label (`finalizedSeen`, `wentBack`). Its
 * group (group.ts) chooses nodes with it: a read at the finalized tag goes to the most final node.
 */
export class LabelFinality {
  readonly #group: UpstreamGroup;
  /** The highest block a node in rotation named finalized (registry `reads.cache.finalized`); -1 if none. */
  #finalized = -1;
  /** The block hashes the prober saw at recent heights, any node's, to see one replaced (a reorg). */
  readonly #hashes = new Map<number, Set<string>>();
  /** The same, each node's own: its block at a height replaced is a reorg under it. */
  readonly #hashesOf = new WeakMap<Upstream, Map<number, string>>();
  #newestSeen = -1;
  /** The hashes of the finalized blocks nodes named, by height: one named again with another hash was rewritten. */
  readonly #finalHashes = new Map<number, string>();
  /** The finalized blocks each node named lately, hash by height. */
  readonly #finalOf = new WeakMap<Upstream, Map<number, string>>();
  /** Each node's own finalized height, as it last named it (`finalizedBy`). */
  readonly #finalizedBy = new WeakMap<Upstream, number>();
  /** The highest of `#finalizedBy`'s: a node below it is less final than another (`moreFinalThan`). */
  #mostFinalNamed = -1;
  /** The block (height and hash) whose events a node last pushed as taken back (`blockRemoved`). */
  #lastRemoved = "";

  constructor(group: UpstreamGroup) {
    this.#group = group;
  }

  get finalized(): number {
    return this.#finalized;
  }

  /**
   * The highest block `node` itself named finalized; -1 before it named one. What a node answers about a
   * block may say its finality (a block's `status`, ACCEPTED_ON_L1 or _L2): an answer is as final as its
   * own node holds the block, not as another node does.
   */
  finalizedBy(node: Upstream): number {
    return this.#finalizedBy.get(node) ?? -1;
  }

  /**
   * A read at the finalized tag was answered with `height`: the node holds it final, whatever its last
   * probe read. Its next such read then goes to a node at least that final (`mostFinalized`), though the
   * probes that would say another node caught up are up to an interval old.
   */
  finalAnswered(node: Upstream, height: number): void {
    if (height > (this.#finalizedBy.get(node) ?? -1)) this.#finalizedNamed(node, height);
  }

  #finalizedNamed(node: Upstream, height: number): void {
    this.#finalizedBy.set(node, height);
    if (height > this.#mostFinalNamed) this.#mostFinalNamed = height;
  }

  /**
   * Another node of the label at its head that named a higher finalized block than `node` did, if one did
   * (`mostFinalized`). One comparison while `node` is as final as any node named.
   */
  moreFinalThan(node: Upstream): Upstream | undefined {
    if (this.finalizedBy(node) >= this.#mostFinalNamed) return undefined;
    const best = this.mostFinalized();
    return best === node ? undefined : best;
  }

  /**
   * For a read at the finalized tag: of the nodes in rotation at the label's served head (which such a read
   * needs, as any read at the head does: one below it would be waited for), the one that named the highest
   * finalized block, when they named different ones (else any will do, chosen as any read is). Another
   * node answers its own older finalized block, and a caller polling it would see finality go back. For a
   * block read in a node's finalized view by number (`atHead` false), of every node in rotation.
   */
  mostFinalized(atHead = true): Upstream | undefined {
    let best: Upstream | undefined;
    let lowest = Number.POSITIVE_INFINITY;
    for (const member of this.#group.members) {
      if (!member.health.inRotation || (atHead && !reached(member, this.#group.served.height))) continue;
      const height = this.finalizedBy(member);
      if (height < lowest) lowest = height;
      if (best === undefined || height > this.finalizedBy(best)) best = member;
    }
    return best !== undefined && this.finalizedBy(best) > lowest ? best : undefined;
  }

  /**
   * A node's own head went back to `height` (a reorg, a dev chain reverted): what was read at the head may
   * be gone. Below the label's finalized height, with no other node in rotation still at or past it, what
   * was final is not either: only a chain reverted or started again (anvil's evm_revert) does that, and
   * every answer kept for the label may be from blocks no longer there. They go, and the finalized height
   * is learned again. One node restored from an old snapshot, beside others still at the head, is that
   * node's own trouble: it lags, and the chain's final blocks stand.
   */
  wentBack(node: Upstream, height: number): void {
    // read before the epoch moves: a depth's finalized height is the served head's
    const finalized = this.#finalizedNow();
    this.#group.served.moved();
    if (height < finalized && this.#aloneAtFinalized(node, finalized)) this.#finalRewritten();
  }

  /** The finalized height: a node's word for it, or a depth below the served head; -1 when unknown. */
  #finalizedNow(): number {
    const depth = this.#group.finalityDepth;
    if (depth === undefined) return this.#finalized;
    return this.#group.served.height < 0 ? -1 : this.#group.served.height - depth;
  }

  /** Whether a node in rotation but `node` named `hash` as its finalized block at `height`, last it named one there. */
  #stillNamed(node: Upstream, height: number, hash: string): boolean {
    for (const member of this.#group.members)
      if (member !== node && member.health.inRotation && this.#finalOf.get(member)?.get(height) === hash)
        return true;
    return false;
  }

  #named(node: Upstream, height: number, hash: string): void {
    let named = this.#finalOf.get(node);
    if (named === undefined) {
      named = new Map();
      this.#finalOf.set(node, named);
    }
    named.delete(height);
    named.set(height, hash);
    if (named.size > FINAL_HASHES) named.delete(named.keys().next().value as number);
  }

  /** Whether no node of the label but `node` is in rotation at or past the finalized height. */
  #aloneAtFinalized(node: Upstream, finalized: number): boolean {
    for (const member of this.#group.members)
      if (member !== node && member.health.inRotation && (member.health.head ?? -1) >= finalized)
        return false;
    return true;
  }

  /** What was final is not: every answer kept for the label goes, and the finalized height is learned again. */
  #finalRewritten(): void {
    // the finality gone first: the epoch that begins holds none of it
    this.#finalized = -1;
    this.#group.served.moved();
    this.#finalHashes.clear();
    this.#group.cache?.forgetAll();
    this.#group.cache?.shared?.forget(sharedScope(this.#group));
  }

  /**
   * A node in rotation named its finalized block: the label's finalized height rises to it, never falls.
   * Named with another hash than a node gave for that height before, while no other node in rotation
   * still names the old one, the final blocks were rewritten under the label: only a chain reverted or
   * reorganised by hand does that (anvil's `evm_revert` or `anvil_reorg` deeper than its finality, with the
   * head back where it was), and it is taken as a head that went back below the finalized height is
   * (`wentBack`).
   */
  finalizedSeen(height: number, hash?: string, node?: Upstream): void {
    if (node !== undefined && height > (this.#finalizedBy.get(node) ?? -1))
      this.#finalizedNamed(node, height);
    if (hash !== undefined) {
      if (node !== undefined) this.#named(node, height, hash);
      // not the head reads' hashes: a block seen at the head may have been replaced before it was final
      const known = this.#finalHashes.get(height);
      if (known !== undefined && known !== hash) {
        // a node on other final blocks than another node in rotation still names is that node's own
        // trouble; once none names the old ones, they were rewritten under every node
        if (node !== undefined && this.#stillNamed(node, height, known)) return;
        this.#finalRewritten();
      }
      this.#finalHashes.set(height, hash);
      if (this.#finalHashes.size > FINAL_HASHES)
        this.#finalHashes.delete(this.#finalHashes.keys().next().value as number);
    }
    if (height > this.#finalized) {
      this.#finalized = height;
      this.#group.served.finalizedNow(height);
    }
  }

  /**
   * `node`'s head block, with its hash and its parent's. Where either differs from the hash that node
   * showed at that height before, or from every hash a node of the label showed there, a block was
   * replaced (a reorg), and what was read at the head may be gone; so it may be when a new head is seen
   * here first, since the head probe that saw its height came before this read of its block, and the
   * block may have been replaced in between. Nodes on sibling blocks of one height (two blocks a network
   * has not chosen between yet) move the epoch once, as the second is seen, and then only when a node's
   * own block changes: each probe of either, its hash another than the other node's, moved it before, and
   * every head read kept between two probes reached the nodes again (issue 31).
   */
  blockSeen(node: Upstream, height: number, hash: string, parent: string): void {
    let own = this.#hashesOf.get(node);
    if (own === undefined) {
      own = new Map();
      this.#hashesOf.set(node, own);
    }
    const replaced =
      this.#other(own.get(height), hash) ||
      this.#other(own.get(height - 1), parent) ||
      this.#unseen(height, hash) ||
      this.#unseen(height - 1, parent);
    if (replaced || height > this.#newestSeen) this.#group.served.moved();
    if (height > this.#newestSeen) this.#newestSeen = height;
    own.set(height, hash);
    own.set(height - 1, parent);
    this.#saw(height, hash);
    this.#saw(height - 1, parent);
    // a reorg deeper than this many blocks is also seen as a head that goes back
    for (const kept of own.keys()) if (kept < height - KEPT_HASHES) own.delete(kept);
    for (const kept of this.#hashes.keys()) if (kept < height - KEPT_HASHES) this.#hashes.delete(kept);
  }

  /**
   * A node pushed an event of a block it took back (a log `removed` by a reorganisation): what was read at
   * the head may be of that block, replaced at its height (a one-block reorg leaves the head's height where
   * it was), and goes before the client has the push. The events of one block taken back move the head's
   * epoch once.
   */
  blockRemoved(height: number, hash: string | undefined): void {
    const block = `${height}:${hash ?? ""}`;
    if (hash !== undefined && block === this.#lastRemoved) return;
    this.#lastRemoved = block;
    this.#group.served.moved();
  }

  #other(known: string | undefined, hash: string): boolean {
    return known !== undefined && known !== hash;
  }

  /** Whether nodes showed blocks at `height`, none of them `hash`. */
  #unseen(height: number, hash: string): boolean {
    const seen = this.#hashes.get(height);
    return seen !== undefined && !seen.has(hash);
  }

  #saw(height: number, hash: string): void {
    const seen = this.#hashes.get(height);
    if (seen === undefined) this.#hashes.set(height, new Set([hash]));
    else seen.add(hash);
  }
}
