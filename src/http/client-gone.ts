import type { ServerResponse } from "node:http";

/**
 * What an upstream call reads of the caller it answers: whether it left, and whether its answer began. A
 * ServerResponse is one; a coalesced call's shared caller (src/cache/shared-caller.ts), which leaves only
 * when every caller waiting on it has, is another.
 */
export type CallerSide = Pick<ServerResponse, "destroyed" | "writableFinished" | "headersSent"> & {
  on(event: "close", listener: () => void): unknown;
};

/**
 * Whether the client went away before its answer was complete. Node marks a response destroyed when
 * its socket closes (and when the gateway cuts it); a finished answer is writableFinished first. Read
 * off the response itself, so the data plane keeps no emitter or AbortController per request: both
 * showed in the profile (docs/performance.md).
 */
export function clientGone(res: CallerSide): boolean {
  return res.destroyed && !res.writableFinished;
}
