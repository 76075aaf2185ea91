import type { Upstream } from "./upstreams.js";

/**
 * How long a caller's calls go first to the node that took its last write. A transaction waits in that
 * node's mempool until it is mined and gossiped: another node would answer the caller's pending nonce
 * without it (ethers' sendTransaction then signs the next transaction with the same nonce) and its lookup
 * by hash with null. A minute covers a few blocks of a 12-second chain, and a mempool's gossip.
 */
export const WRITER_STICKY_MS = 60_000;

/** At most this many callers remembered: the oldest go first. */
const WRITERS = 10_000;

/**
 * Per label and mount (upstream/group.ts): the node that took each caller's last write. Its calls go
 * there first (`UpstreamCall.preferred`) while it is in rotation and has what the call needs (the head
 * rule still chooses who may take a call); the caller's own key or address names it, never a request.
 */
export class WriterNodes {
  readonly #took = new Map<string, { readonly upstream: Upstream; readonly at: number }>();

  /** A write of `writer`'s was answered by `upstream`. */
  took(writer: string, upstream: Upstream): void {
    this.#took.delete(writer);
    this.#took.set(writer, { upstream, at: performance.now() });
    if (this.#took.size > WRITERS) this.#took.delete(this.#took.keys().next().value as string);
  }

  /** The node that took `caller`'s write within the last minute, while it is in rotation. */
  nodeOf(caller: string): Upstream | undefined {
    if (this.#took.size === 0) return undefined;
    const took = this.#took.get(caller);
    if (took === undefined) return undefined;
    if (performance.now() - took.at > WRITER_STICKY_MS || !took.upstream.health.inRotation) {
      this.#took.delete(caller);
      return undefined;
    }
    return took.upstream;
  }
}
