import { GatewayError } from "../errors/table.js";

/**
 * Each caller's held calls on this process: streams and long polls, which hold a connection of their
 * node's pool for them (upstream/upstreams.ts) for as long as the node holds them. One caller may hold
 * `max` at once (`limits.maxHeldCallsPerCaller`); past that, TOO_MANY_HELD_CALLS, so that one key cannot
 * take every such connection of a node and leave the other callers' long polls queued behind its own.
 */
export class HeldCalls {
  readonly #byCaller = new Map<string, number>();
  /** How to end each held call that gave one, by its caller: a withdrawn key's (`cut`). */
  readonly #cuts = new Map<string, Set<() => void>>();
  /** The limit; a reload sets its own on the count that every served config shares (proxy/server.ts). */
  max: number;

  constructor(max: number) {
    this.max = max;
  }

  /** A slot for one more of `caller`'s held calls, or TOO_MANY_HELD_CALLS; `cut` ends it. */
  take(caller: string, cut?: () => void): void {
    const held = this.#byCaller.get(caller) ?? 0;
    if (held >= this.max) throw new GatewayError("TOO_MANY_HELD_CALLS", { limit: this.max });
    this.#byCaller.set(caller, held + 1);
    if (cut === undefined) return;
    const cuts = this.#cuts.get(caller);
    if (cuts === undefined) this.#cuts.set(caller, new Set([cut]));
    else cuts.add(cut);
  }

  release(caller: string, cut?: () => void): void {
    const held = (this.#byCaller.get(caller) ?? 1) - 1;
    if (held > 0) this.#byCaller.set(caller, held);
    else this.#byCaller.delete(caller);
    const cuts = cut === undefined ? undefined : this.#cuts.get(caller);
    if (cuts === undefined) return;
    cuts.delete(cut as () => void);
    if (cuts.size === 0) this.#cuts.delete(caller);
  }

  /**
   * Ends `caller`'s held calls: its key was withdrawn (revoked, expired, past a rotation's grace) or its
   * settings changed, and a stream or long poll it opened before must not go on, as its WebSocket
   * connections do not (proxy/server.ts `closeConnectionsOf`).
   */
  cut(caller: string): void {
    for (const cut of [...(this.#cuts.get(caller) ?? [])]) cut();
  }
}
