import { GatewayError } from "../errors/table.js";

/**
 * Each caller's held calls on this process: streams and long polls, which hold a connection of their
 * node's pool for them (upstream/upstreams.ts) for as long as the node holds them. One caller may hold
 * `max` at once (`limits.maxHeldCallsPerCaller`); past that, TOO_MANY_HELD_CALLS, so that one key cannot
 * take every such connection of a node and leave the other callers' long polls queued behind its own.
 */
export class HeldCalls {
  readonly #byCaller = new Map<string, number>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  /** A slot for one more of `caller`'s held calls, or TOO_MANY_HELD_CALLS. */
  take(caller: string): void {
    const held = this.#byCaller.get(caller) ?? 0;
    if (held >= this.#max) throw new GatewayError("TOO_MANY_HELD_CALLS", { limit: this.#max });
    this.#byCaller.set(caller, held + 1);
  }

  release(caller: string): void {
    const held = (this.#byCaller.get(caller) ?? 1) - 1;
    if (held > 0) this.#byCaller.set(caller, held);
    else this.#byCaller.delete(caller);
  }
}
