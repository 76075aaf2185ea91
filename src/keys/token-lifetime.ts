/** The longest delay setTimeout takes: a later expiry is waited for in steps. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A connection opened with the JWT its key's settings require lasts as long as that token does: its calls
 * are made under the token of its upgrade (a browser cannot send another on an open socket), and `expired`
 * runs when it stops being valid (docs/plans.md, "Key settings"), at once when it already has. So does a
 * stream or long poll over HTTP (pipeline/http.ts).
 */
export class TokenLifetime {
  #timer: NodeJS.Timeout | undefined;

  constructor(validUntilMs: number, expired: () => void) {
    const wait = (): void => {
      const left = validUntilMs - Date.now();
      if (left <= 0) {
        this.#timer = undefined;
        expired();
        return;
      }
      this.#timer = setTimeout(wait, Math.min(left, MAX_TIMER_MS));
      this.#timer.unref();
    };
    wait();
  }

  stop(): void {
    clearTimeout(this.#timer);
  }
}
