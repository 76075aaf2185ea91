/**
 * Calls waiting for something about a group of upstreams (its first verdicts, a node at a head), each until
 * it comes or a timeout: whichever is first calls back, once.
 */
export class Waiters<T> {
  readonly #waiting = new Set<{
    readonly value: T;
    readonly callback: () => void;
    readonly timer: NodeJS.Timeout;
  }>();

  get size(): number {
    return this.#waiting.size;
  }

  /** Calls back when `release` lets `value` go, or after `timeoutMs`. */
  add(value: T, timeoutMs: number, callback: () => void): void {
    const waiter = {
      value,
      callback,
      timer: setTimeout(() => {
        this.#waiting.delete(waiter);
        callback();
      }, timeoutMs),
    };
    this.#waiting.add(waiter);
  }

  /** Calls back every waiter whose value `due` says may go now. */
  release(due: (value: T) => boolean = () => true): void {
    if (this.#waiting.size === 0) return;
    for (const waiter of [...this.#waiting]) {
      if (!due(waiter.value)) continue;
      this.#waiting.delete(waiter);
      clearTimeout(waiter.timer);
      waiter.callback();
    }
  }
}
