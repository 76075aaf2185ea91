import type { ServerResponse } from "node:http";

/**
 * Whether the client went away before its answer was complete. Node marks a response destroyed when
 * its socket closes (and when the gateway cuts it); a finished answer is writableFinished first. Read
 * off the response itself, so the data plane keeps no emitter or AbortController per request: both
 * showed in the profile (docs/performance.md).
 */
export function clientGone(res: ServerResponse): boolean {
  return res.destroyed && !res.writableFinished;
}

/**
 * An AbortSignal that fires when the client goes away, for undici's request(); `release` detaches it
 * once the upstream answer is in. Only the paths that read a whole upstream answer use one.
 */
export function clientGoneSignal(res: ServerResponse): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) controller.abort();
  };
  if (clientGone(res)) controller.abort();
  else res.on("close", onClose);
  return { signal: controller.signal, release: () => res.off("close", onClose) };
}
