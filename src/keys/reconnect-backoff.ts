/**
 * How long the proxy waits before it tries the account store's listening connection again. A change committed
 * while no proxy listens reaches a proxy only once it is back (it then reads everything it missed at once), so
 * the longest wait is how late a revocation can be after the store returns: it is kept well under the second
 * the deployment promises (docs/deployment.md). The first retries come quickly, for a connection that only
 * blipped; the jitter keeps a fleet's proxies from all knocking at the same instant.
 */
export const RECONNECT_FIRST_MS = 50;
export const RECONNECT_MAX_MS = 250;

/**
 * The wait before retry number `attempt` (0 for the first after a loss): the ceiling doubles from
 * RECONNECT_FIRST_MS up to RECONNECT_MAX_MS, and the wait is drawn between half the ceiling and all of it.
 */
export function reconnectDelay(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RECONNECT_FIRST_MS * 2 ** Math.min(attempt, 16), RECONNECT_MAX_MS);
  return ceiling / 2 + (random() * ceiling) / 2;
}
