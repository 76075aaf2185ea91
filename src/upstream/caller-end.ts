import type { CallerSide } from "../http/client-gone.js";

// An upstream call ends in its node's response handler, or in a timer (its deadline, a wait for the head):
// what the code it calls back throws there, undici swallows, and a timer's callback would take the process
// down. Either way the caller would wait, unanswered and unlogged, until its socket's idle timeout. So the
// call hands such a throw to whoever owns its caller (call-run.ts), which ends the request as a bug.

const END = Symbol("callerEnd");
type Endable = CallerSide & { [END]?: (failure: unknown) => void };

/**
 * What ends `caller`'s request when its upstream call's completion throws: the HTTP relay's done, which
 * the request's error boundary turns into a logged INTERNAL and an access line (pipeline/http.ts); a
 * coalesced call's, which does so for every client waiting on it (src/cache/). The last one set wins.
 */
export function endsBy(caller: CallerSide, end: (failure: unknown) => void): void {
  (caller as Endable)[END] = end;
}

/** Ends `caller`'s request with `failure`; false when nothing was set to end it. */
export function endAfterThrow(caller: CallerSide, failure: unknown): boolean {
  const end = (caller as Endable)[END];
  if (end === undefined) return false;
  end(failure);
  return true;
}
