import { ERRORS, type ErrorSpec } from "../../errors/table.js";
import { percentileOf } from "../../keys/usage-detail.js";
import type { ServiceContext } from "./context.js";
import { keyStatus } from "./key-view.js";
import type { Account, KeyRecord } from "./types.js";

/** Calls and compute units over a period. */
export interface Spent {
  readonly calls: number;
  readonly units: number;
}

/** One key in the overview: what it spent today and this month, per network, against its plan's quotas. */
export interface KeyOverview {
  readonly id: number;
  readonly prefix: string;
  readonly plan: string;
  /**
   * The plan's quotas in compute units (0: none), whether they count the key or the account, and what a
   * per-key quota has been spent by the key's line: the key and the keys it replaced by rotation, which
   * spend one quota (docs/plans.md).
   */
  readonly quota: {
    readonly daily: number;
    readonly monthly: number;
    readonly per: "key" | "account";
    readonly used: { readonly today: number; readonly month: number };
  };
  readonly today: Spent;
  readonly month: Spent;
  readonly networks: readonly { readonly label: string; readonly today: Spent; readonly month: Spent }[];
}

/** GET /v1/overview: the account's month so far, for the dashboard's first page (docs/plans.md). */
export interface Overview {
  readonly day: string;
  readonly month: string;
  /** When today's and this month's quotas reset (ISO 8601, UTC). */
  readonly resets: { readonly day: string; readonly month: string };
  readonly keys: readonly KeyOverview[];
  /** This month's refusals and failures by error code, most first, each with what it means (docs/errors.md). */
  readonly errors: readonly { readonly code: string; readonly count: number; readonly message?: string }[];
  /** This month's methods by the gateway's mean time, slowest first, and by compute units, dearest first. */
  readonly slowest: readonly { label: string; method: string; calls: number; meanMs: number }[];
  readonly dearest: readonly { label: string; method: string; calls: number; units: number }[];
  /** This month's p50 and p95 of the gateway's time per network, as the bounds of their buckets. */
  readonly latency: readonly { label: string; calls: number; p50Ms: number | null; p95Ms: number | null }[];
}

const TOP = 5;

/** The gateway's own message for an error code, as its answer said it to the caller; none for a code it does not make. */
function meaningOf(code: string): { message?: string } {
  const spec = (ERRORS as Readonly<Record<string, ErrorSpec>>)[code];
  return spec === undefined ? {} : { message: spec.message };
}

/** A bucket's bound; null for the last, open one (slower than 5 s). */
function bound(ms: number | undefined): number | null {
  return ms === undefined || !Number.isFinite(ms) ? null : ms;
}
const ZERO: Spent = { calls: 0, units: 0 };

/** The account's overview: its keys that are active, or were this month. */
export async function overviewOf(context: ServiceContext, account: Account): Promise<Overview> {
  const { store, plans } = context;
  const now = context.now();
  const date = new Date(now);
  const day = date.toISOString().slice(0, 10);
  const month = day.slice(0, 7);
  const monthStart = `${month}-01`;
  const everyKey = await store.keys(account.id);
  // every key's month: one revoked or expired this month spent in it, and its spend counts in the quotas
  // the proxies enforce (keys/quota-spent.ts), so its meter and its errors stay on the overview
  const rows = await store.usage(
    everyKey.map((k) => k.prefix),
    monthStart,
    day,
  );
  const spentThisMonth = new Set(rows.map((r) => r.key));
  const keys = everyKey.filter(
    (k) =>
      keyStatus(k, now) === "active" || k.createdAt >= Date.parse(monthStart) || spentThisMonth.has(k.prefix),
  );
  const prefixes = keys.map((k) => k.prefix);
  /** The prefixes of each quota line: a key and those it replaced by rotation. */
  const lines = new Map<string, string[]>();
  for (const k of everyKey) lines.set(k.quotaPrefix, [...(lines.get(k.quotaPrefix) ?? []), k.prefix]);
  const [methods, codes] = await Promise.all([
    store.usageMethods(prefixes, monthStart, day),
    store.usageCodes(prefixes, monthStart, day),
  ]);
  const overviewOfKey = (key: KeyRecord): KeyOverview => {
    const own = rows.filter((r) => r.key === key.prefix);
    const labels = [...new Set(own.map((r) => r.label))].sort();
    const spent = (list: typeof own): Spent =>
      list.reduce((sum, r) => ({ calls: sum.calls + r.calls, units: sum.units + r.units }), ZERO);
    // a plan the deployment no longer has: the proxies serve its keys on the shared plan's terms (PlanBook)
    const plan = plans[key.plan] ?? plans.shared;
    // who spends the quota: the key's line (the keys it replaced by rotation too), or every key of the
    // account on the plan, when the plan's quota is the account's
    const spenders = plan?.quotaPer === "account" ? keys.filter((k) => k.plan === key.plan) : [key];
    const line = new Set(spenders.flatMap((k) => lines.get(k.quotaPrefix) ?? [k.prefix]));
    const lineRows = rows.filter((r) => line.has(r.key));
    return {
      id: key.id,
      prefix: key.prefix,
      plan: key.plan,
      quota: {
        daily: plan?.dailyQuota ?? 0,
        monthly: plan?.monthlyQuota ?? 0,
        per: plan?.quotaPer ?? "key",
        used: { today: spent(lineRows.filter((r) => r.day === day)).units, month: spent(lineRows).units },
      },
      today: spent(own.filter((r) => r.day === day)),
      month: spent(own),
      networks: labels.map((label) => ({
        label,
        today: spent(own.filter((r) => r.label === label && r.day === day)),
        month: spent(own.filter((r) => r.label === label)),
      })),
    };
  };
  const byCode = new Map<string, number>();
  for (const c of codes) byCode.set(c.code, (byCode.get(c.code) ?? 0) + c.count);
  const byMethod = new Map<
    string,
    { label: string; method: string; calls: number; units: number; msSum: number; timed: number }
  >();
  const byLabel = new Map<string, number[]>();
  for (const m of methods) {
    const id = `${m.label} ${m.method}`;
    const seen = byMethod.get(id) ?? {
      label: m.label,
      method: m.method,
      calls: 0,
      units: 0,
      msSum: 0,
      timed: 0,
    };
    seen.calls += m.calls;
    seen.units += m.units;
    seen.msSum += m.msSum;
    seen.timed += m.latency.reduce((sum, n) => sum + n, 0);
    byMethod.set(id, seen);
    const buckets = byLabel.get(m.label) ?? m.latency.map(() => 0);
    byLabel.set(
      m.label,
      buckets.map((n, i) => n + (m.latency[i] ?? 0)),
    );
  }
  const all = [...byMethod.values()];
  return {
    day,
    month,
    resets: {
      day: new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1)).toISOString(),
      month: new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)).toISOString(),
    },
    keys: keys.map(overviewOfKey),
    errors: [...byCode.entries()]
      .map(([code, count]) => ({ code, count, ...meaningOf(code) }))
      .sort((a, b) => b.count - a.count),
    slowest: all
      .filter((m) => m.timed > 0)
      .map((m) => ({
        label: m.label,
        method: m.method,
        calls: m.calls,
        meanMs: Math.round(m.msSum / m.timed),
      }))
      .sort((a, b) => b.meanMs - a.meanMs)
      .slice(0, TOP),
    dearest: all
      .filter((m) => m.units > 0)
      .map((m) => ({ label: m.label, method: m.method, calls: m.calls, units: m.units }))
      .sort((a, b) => b.units - a.units)
      .slice(0, TOP),
    latency: [...byLabel.entries()]
      .map(([label, buckets]) => ({
        label,
        calls: buckets.reduce((sum, n) => sum + n, 0),
        p50Ms: bound(percentileOf(buckets, 0.5)),
        p95Ms: bound(percentileOf(buckets, 0.95)),
      }))
      .filter((l) => l.calls > 0)
      .sort((a, b) => a.label.localeCompare(b.label)),
  };
}
