/** Waits until `condition` holds, checking every 20 ms; fails with `what` after `timeoutMs`. */
export async function eventually(condition: () => boolean, timeoutMs: number, what: string): Promise<number> {
  const started = performance.now();
  while (!condition()) {
    if (performance.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return performance.now() - started;
}

/**
 * Waits until the asynchronous `check` resolves true (a request answered as hoped, say), asking again 20 ms
 * after each answer; fails with `what` after `timeoutMs`.
 */
export async function eventuallyAsync(
  check: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return performance.now() - started;
}
