import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";

/**
 * Fires "abort" when the client goes away before its answer is complete, so the upstream request is
 * abandoned too. undici takes any emitter with `aborted` and an "abort" event as a request's signal
 * (lib/core/util.js, addAbortListener); an AbortController per request cost measurably more
 * (bench/README.md, "What the profile showed").
 */
export class ClientGone extends EventEmitter {
  aborted = false;

  constructor(res: ServerResponse) {
    super();
    res.once("close", () => {
      if (res.writableFinished) return;
      this.aborted = true;
      this.emit("abort");
    });
  }
}
