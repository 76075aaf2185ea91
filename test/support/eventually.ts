/**
 * Waits until `condition` holds, checking every 20 ms; fails with `what` after `timeoutMs`. The condition
 * may ask something over the network (a promise).
 */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<number> {
  const started = performance.now();
  while (!(await condition())) {
    if (performance.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return performance.now() - started;
}
