import type { Logger } from "../log.js";
import type { QuotaCrossing } from "./quota-ledger.js";

/** A quota's threshold passed, as the account store keeps it until the control plane mails it. */
export interface QuotaNotice {
  /** The quota's scope (a key's id, or `account:<id>`), its period (`2026-11-26`, `2026-11`), 80 or 100. */
  readonly scope: string;
  readonly period: string;
  readonly threshold: number;
  readonly accountId: number;
  readonly keyPrefix: string;
  readonly plan: string;
  readonly quota: number;
  readonly resetsAt: number;
}

/** Where a proxy writes notices: once per scope, period, threshold and quota, whichever instance writes first. */
export interface NoticeSink {
  notice(notice: QuotaNotice): Promise<void>;
}

/** How long a notice the store did not take waits before it is written again. */
const NOTICE_RETRY_MS = 1_000;

/** Notices already written by this process; a day's worth is far below it. */
const MAX_REMEMBERED = 50_000;

/**
 * What a ledger calls when a quota crosses 80 % or 100 %: the crossing written to the account store, once
 * per scope, period and threshold (the store's key makes it once across instances too; the control plane
 * sends the e-mail, docs/plans.md). A key of the deployment config has no account and no e-mail: its
 * crossing is logged only.
 */
export function quotaNotices(
  sink: NoticeSink | undefined,
  logger: Logger,
): (crossing: QuotaCrossing) => void {
  const written = new Set<string>();
  return (crossing) => {
    // a quota raised within its period is crossed again at its new size
    const id = `${crossing.scope}\n${crossing.periodId}\n${crossing.threshold}\n${crossing.limit}`;
    if (written.has(id)) return;
    if (written.size >= MAX_REMEMBERED) written.clear();
    written.add(id);
    const owner = crossing.owner;
    logger.log(crossing.threshold === 100 ? "warn" : "info", "quota crossed", {
      key: owner?.keyId,
      plan: owner?.plan,
      period: crossing.period,
      threshold: crossing.threshold,
      quota: crossing.limit,
    });
    const account = owner?.accountId.startsWith("account:") ? Number(owner.accountId.slice(8)) : Number.NaN;
    if (sink === undefined || owner === undefined || !Number.isInteger(account)) return;
    const notice: QuotaNotice = {
      scope: crossing.scope,
      period: crossing.periodId,
      threshold: crossing.threshold,
      accountId: account,
      keyPrefix: owner.keyId,
      plan: owner.plan,
      quota: crossing.limit,
      resetsAt: crossing.resetsAt,
    };
    let tries = 0;
    const write = (): void => {
      sink.notice(notice).catch((error: Error) => {
        if (tries++ === 0) logger.log("warn", "quota notice not written", { reason: error.message });
        // tried again until the store takes it (a crossing is seen once: no later call makes it again),
        // while its period lasts; the store's key keeps it to one e-mail
        if (Date.now() + NOTICE_RETRY_MS < notice.resetsAt) setTimeout(write, NOTICE_RETRY_MS).unref();
        else written.delete(id);
      });
    };
    write();
  };
}
