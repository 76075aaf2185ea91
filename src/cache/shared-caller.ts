import type { ServerResponse } from "node:http";
import { type CallerSide, clientGone } from "../http/client-gone.js";

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

  /** A client waits on the call; its leaving counts down, once. */
  join(res: ServerResponse): void {
    // a client gone before it joined (while a shared lookup ran) waits for nothing: its close has fired
    if (clientGone(res)) return;
    this.#waiting++;
    let counted = false;
    res.on("close", () => {
      if (counted || !clientGone(res)) return;
      counted = true;
      if (--this.#waiting === 0) for (const listener of this.#listeners) listener();
    });
  }

  on(_event: "close", listener: () => void): this {
    this.#listeners.push(listener);
    return this;
  }
}
