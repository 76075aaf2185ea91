import { dashboardUrl } from "../endpoint-urls.js";
import type { ServiceContext } from "./context.js";
import { quotaEmail } from "./emails.js";

/**
 * The e-mails at 80 % and 100 % of a quota (docs/plans.md). Proxies write each crossing to the store once
 * (plans/quota-notices.ts); this sends what is unsent every `intervalMs`. A notice is marked sent before it
 * is mailed, so two control planes never both send it, and unmarked again if the mailer fails, so a
 * failure is retried rather than lost.
 */
export class QuotaMail {
  readonly #context: ServiceContext;
  readonly #timer: NodeJS.Timeout;
  #sending: Promise<void> = Promise.resolve();
  readonly #onError: (error: Error) => void;

  constructor(context: ServiceContext, intervalMs: number, onError: (error: Error) => void) {
    this.#context = context;
    this.#onError = onError;
    this.#timer = setInterval(() => void this.sendPending(), intervalMs);
    this.#timer.unref();
  }

  /** Sends every unsent notice, after any send under way. */
  sendPending(): Promise<void> {
    this.#sending = this.#sending.then(() => this.#send().catch(this.#onError));
    return this.#sending;
  }

  /** The scopes, periods and quota sizes whose 100 % this control plane mailed lately. */
  readonly #reached = new Set<string>();

  #remember(period: string): void {
    this.#reached.add(period);
    // a day's and a month's crossings of every customer fit many times over; the oldest go first
    if (this.#reached.size > 100_000) this.#reached.delete(this.#reached.values().next().value as string);
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#sending;
  }

  async #send(): Promise<void> {
    const { store, config, now } = this.#context;
    const publicUrl = dashboardUrl(config);
    // Two proxies may write a scope's 100 % a few milliseconds before its 80 %: the 80 % goes first, and
    // one written after its 100 % was mailed says less than the customer knows already, and is not sent.
    const pending = (await store.unsentNotices()).sort((a, b) => a.threshold - b.threshold);
    for (const notice of pending) {
      if (!(await store.markNoticeSent(notice, now()))) continue;
      // a quota raised within its period is another quota: its 80 % is news
      const period = `${notice.scope} ${notice.period} ${notice.quota}`;
      if (notice.threshold < 100 && this.#reached.has(period)) continue;
      if (notice.threshold >= 100) this.#remember(period);
      try {
        await this.#context.mail(notice.email, quotaEmail(notice, publicUrl));
      } catch (error) {
        await store.unmarkNotice(notice);
        throw error;
      }
    }
  }
}
