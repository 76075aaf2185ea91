import { GatewayError } from "../../errors/table.js";
import type { ServiceContext } from "./context.js";
import { ownKey } from "./input.js";
import { type Overview, overviewOf } from "./overview.js";
import type { Account } from "./types.js";

/**
 * Calls and compute units per day and network over a range, errors apart (GET /v1/keys/{id}/usage,
 * GET /v1/usage).
 */
export interface UsageReport {
  readonly key?: { readonly id: number; readonly prefix: string };
  readonly from: string;
  readonly to: string;
  readonly days: readonly {
    day: string;
    label: string;
    calls: number;
    errors: number;
    units: number;
    key?: string;
  }[];
  readonly total: { readonly calls: number; readonly errors: number; readonly units: number };
}

/**
 * Usage reports from `from` to `to` (YYYY-MM-DD, UTC, both included; the last 30 days by default). Counts
 * reach the store within the proxies' flush interval.
 */
export class UsageReports {
  readonly #context: ServiceContext;

  constructor(context: ServiceContext) {
    this.#context = context;
  }

  /** One key's calls per day and network, errors apart. */
  async ofKey(account: Account, keyId: unknown, from: unknown, to: unknown): Promise<UsageReport> {
    const key = await ownKey(this.#context.store, account, keyId);
    const range = this.#range(from, to);
    const days = (await this.#context.store.usage([key.prefix], range.from, range.to)).map(
      ({ key: _, ...row }) => row,
    );
    return { key: { id: key.id, prefix: key.prefix }, ...range, days, total: totalOf(days) };
  }

  /** Every key of the account, the same way, each row naming its key's prefix. */
  async ofAccount(account: Account, from: unknown, to: unknown): Promise<UsageReport> {
    const range = this.#range(from, to);
    const keys = (await this.#context.store.keys(account.id)).map((k) => k.prefix);
    const days = await this.#context.store.usage(keys, range.from, range.to);
    return { ...range, days, total: totalOf(days) };
  }

  /** The account's month so far: meters against quotas, errors by code, slow and dear methods, latency. */
  overview(account: Account): Promise<Overview> {
    return overviewOf(this.#context, account);
  }

  #range(fromInput: unknown, toInput: unknown): { from: string; to: string } {
    const today = new Date(this.#context.now()).toISOString().slice(0, 10);
    const to = fromInput === undefined && toInput === undefined ? today : dayOf(toInput ?? today, "to");
    const from =
      fromInput === undefined
        ? new Date(Date.parse(to) - 29 * 86_400_000).toISOString().slice(0, 10)
        : dayOf(fromInput, "from");
    if (from > to) throw new GatewayError("INVALID_FIELD", { field: "from", reason: "after to" });
    return { from, to };
  }
}

/** A day as YYYY-MM-DD, or INVALID_FIELD naming `field`. */
function dayOf(input: unknown, field: string): string {
  if (typeof input !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(input) || Number.isNaN(Date.parse(input)))
    throw new GatewayError("INVALID_FIELD", { field, reason: "a day as YYYY-MM-DD" });
  // Date.parse rolls an impossible day over (2026-02-30 is March 2nd): the day must read back as given
  if (new Date(Date.parse(input)).toISOString().slice(0, 10) !== input)
    throw new GatewayError("INVALID_FIELD", { field, reason: `${input} is not a day of the calendar` });
  return input;
}

interface Totals {
  calls: number;
  errors: number;
  units: number;
}

function totalOf(rows: readonly Totals[]): Totals {
  return rows.reduce(
    (sum, r) => ({ calls: sum.calls + r.calls, errors: sum.errors + r.errors, units: sum.units + r.units }),
    { calls: 0, errors: 0, units: 0 },
  );
}
