import type { RawData } from "ws";
import type { UpstreamMessage } from "./pending-calls.js";

/** What a message rebuilt from its calls (one with no text of its own) counts for each call. */
const CALL_SIZE = 256;

/**
 * Client messages a connection holds back, in the order sent, while they cannot go yet: while it moves to
 * another node (move.ts), while its node catches up with the head (connection.ts), behind a message waiting
 * for its quota from Redis (message-intake.ts). They sit in memory for as long as that takes, so each hold
 * is bounded by `limits.ws.maxBufferedBytes`, as what a client does not read is: past it the connection is
 * closed with 1008 (connection.ts `tooMuchSent`).
 */
export class HeldMessages<T> {
  readonly #sizeOf: (message: T) => number;
  /** Undefined when nothing is held back: messages go as they come. */
  #held: T[] | undefined = undefined;
  #size = 0;

  constructor(sizeOf: (message: T) => number) {
    this.#sizeOf = sizeOf;
  }

  /** Whether messages are held back now: the next one must wait behind them. */
  get holding(): boolean {
    return this.#held !== undefined;
  }

  /** Messages are held back from now on (held ones stay). */
  start(): void {
    this.#held ??= [];
  }

  /** Keeps one more message; false once what is held has passed `bound`, and the connection must close. */
  hold(message: T, bound: number): boolean {
    if (this.#held === undefined) this.#held = [];
    this.#held.push(message);
    this.#size += this.#sizeOf(message);
    return this.#size <= bound;
  }

  /** Ends the hold: the messages held, in order, which go now. */
  release(): T[] {
    const held = this.#held ?? [];
    this.#held = undefined;
    this.#size = 0;
    return held;
  }
}

/** A message held for a node: its text's length, or an estimate for one rebuilt from its calls. */
export function upstreamSize(message: UpstreamMessage): number {
  return message.text?.length ?? message.calls.length * CALL_SIZE;
}

/** A client message's size in bytes, however ws handed it over. */
export function clientSize(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.length, 0);
  return data.byteLength;
}
