import type { ServerResponse } from "node:http";
import { type CallerSide, clientGone } from "../http/client-gone.js";

/**
 * A client waiting on a coalesced call with no HTTP response of its own (a WebSocket call,
 * ws/cached-calls.ts): it holds the calls it waits on until it lets go (`release`), once its answer has
 * landed or its connection has closed.
 */
export class CallHold {
  #leaves: (() => void)[] | undefined = [];

  /** Whether it has let go: it then holds no call it joins. */
  get released(): boolean {
    return this.#leaves === undefined;
  }

  /** `leave` is called when it lets go. */
  holds(leave: () => void): void {
    this.#leaves?.push(leave);
  }

  release(): void {
    const leaves = this.#leaves;
    this.#leaves = undefined;
    for (const leave of leaves ?? []) leave();
  }
}

/**
 * The caller of a coalesced upstream call (relay-cached.ts): every client waiting for the same answer. It
 * leaves only when each of them has, so the first client hanging up does not cancel the call for the rest;
 * when the last one leaves, the call's attempts are aborted as a lone client's would be.
 */
export class SharedCaller implements CallerSide {
  readonly headersSent = false;
  readonly writableFinished = false;
  #waiting = 0;
  #listeners: (() => void)[] = [];

  /** Whether every client waiting on the call has left. */
  get destroyed(): boolean {
    return this.#waiting === 0;
  }

  /** A client waits on the call (`holder`: its HTTP response, or its hold); its leaving counts down, once. */
  join(holder: ServerResponse | CallHold): void {
    if (holder instanceof CallHold) {
      if (!holder.released) holder.holds(this.#held());
      return;
    }
    // a client gone before it joined (while a shared lookup ran) waits for nothing: its close has fired
    if (clientGone(holder)) return;
    const leave = this.#held();
    holder.on("close", () => {
      if (clientGone(holder)) leave();
    });
  }

  /** One more client holds the call: what it calls when it leaves (once). */
  #held(): () => void {
    this.#waiting++;
    let counted = false;
    return () => {
      if (counted) return;
      counted = true;
      if (--this.#waiting === 0) for (const listener of this.#listeners) listener();
    };
  }

  on(_event: "close", listener: () => void): this {
    this.#listeners.push(listener);
    return this;
  }
}
