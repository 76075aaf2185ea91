/** A call waiting for a moment: its next hedge, or its deadline. */
export interface Due {
  /** performance.now() at which `due()` is to run. */
  readonly dueAt: number;
  due(now: number): void;
}

// How often the clock looks at the calls it holds: a hedge or a deadline may run this late.
const TICK_MS = 10;

/**
 * One clock for every call's hedge and deadline, instead of a timer per call: a setTimeout and its
 * clearTimeout cost 0.24 µs per call in a loop (more with the Timeout objects' garbage), against 0.04 µs
 * for a Set's add and delete. The clock runs only while it holds calls, and never keeps the process up.
 */
class CallClock {
  readonly #waiting = new Set<Due>();
  #timer: NodeJS.Timeout | undefined = undefined;

  add(call: Due): void {
    this.#waiting.add(call);
    if (this.#timer === undefined) {
      this.#timer = setInterval(this.#tick, TICK_MS);
      this.#timer.unref();
    }
  }

  delete(call: Due): void {
    this.#waiting.delete(call);
  }

  readonly #tick = (): void => {
    if (this.#waiting.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      return;
    }
    const now = performance.now();
    for (const call of this.#waiting) if (call.dueAt <= now) call.due(now);
  };
}

export const callClock = new CallClock();
