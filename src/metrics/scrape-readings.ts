import type { AnswerCache, CacheCounts } from "../cache/answer-cache.js";
import { UPSTREAM_STATES, type UpstreamHealth } from "../upstream/health.js";
import type { Upstream, UpstreamTable } from "../upstream/upstreams.js";
import { GaugeReading, type MetricValue, type RegistrableMetric } from "./tables.js";

// What the metrics read at scrape time from the state the data plane keeps anyway: each label's
// WebSocket counts, each upstream's health and counts, each label's answer rules, cache and served head.
// Nothing here runs per request (gateway-metrics.ts holds the request series).

export function perLabel(counts: ReadonlyMap<string, number>): MetricValue[] {
  return [...counts].map(([label, value]) => ({ labels: { label }, value }));
}

/**
 * The upstreams the metrics read: the current config's, and those of configs a reload replaced that still
 * hold calls (proxy/server.ts keeps a retired config until its requests end). Its nodes' calls in flight
 * and held are the current config's nodes' too: an algod long poll held across a reload still takes a
 * connection of that node.
 */
export interface ServedUpstreams extends Pick<UpstreamTable, "groups"> {
  retired?(): Iterable<Pick<UpstreamTable, "groups">>;
}

/**
 * Per upstream, from its health record and its counts (upstream/upstream-counts.ts). With node:cluster,
 * each worker judges its upstreams itself; the primary takes the highest state gauge (a state any worker
 * sees), head and lag, adds up calls in flight and the counters, and takes the mean latency and error rate.
 */
export function upstreamSeries(table: ServedUpstreams): RegistrableMetric[] {
  const reading = (
    name: string,
    help: string,
    aggregator: "sum" | "max" | "average",
    read: (member: Upstream, push: (value: number, extra?: Record<string, string>) => void) => void,
    type: "gauge" | "counter" = "gauge",
  ) =>
    new GaugeReading(
      name,
      help,
      aggregator,
      () => {
        const values: MetricValue[] = [];
        for (const group of table.groups()) {
          for (const member of group.members) {
            const labels = { label: group.label, mount: group.mount, upstream: member.metricName };
            read(member, (value, extra) => values.push({ labels: { ...labels, ...extra }, value }));
          }
        }
        return values;
      },
      type,
    );
  const gauge = (
    name: string,
    help: string,
    aggregator: "sum" | "max" | "average",
    read: (health: UpstreamHealth, push: (value: number, extra?: Record<string, string>) => void) => void,
  ) => reading(name, help, aggregator, (member, push) => read(member.health, push));
  const counter = (
    name: string,
    help: string,
    read: (member: Upstream, push: (value: number, extra?: Record<string, string>) => void) => void,
  ) => reading(name, help, "sum", read, "counter");
  // what a node still has out on retired configs, shown on the current config's node of the same name
  const outstanding = (name: string, help: string, read: (health: UpstreamHealth) => number) =>
    new GaugeReading(name, help, "sum", () => {
      const earlier = new Map<string, number>();
      for (const old of table.retired?.() ?? [])
        for (const group of old.groups())
          for (const member of group.members) {
            const key = `${group.label}\n${group.mount}\n${member.name}`;
            earlier.set(key, (earlier.get(key) ?? 0) + read(member.health));
          }
      const values: MetricValue[] = [];
      for (const group of table.groups())
        for (const member of group.members) {
          const value =
            read(member.health) + (earlier.get(`${group.label}\n${group.mount}\n${member.name}`) ?? 0);
          values.push({
            labels: { label: group.label, mount: group.mount, upstream: member.metricName },
            value,
          });
        }
      return values;
    });
  return [
    counter(
      "gateway_upstream_attempts_total",
      "Attempts sent to the upstream, by outcome: answered, failed (an error, a 5xx or 429), dismissed (another node answered first)",
      ({ counts }, push) => {
        push(counts.answered, { outcome: "answered" });
        push(counts.failed, { outcome: "failed" });
        push(counts.dismissed, { outcome: "dismissed" });
      },
    ),
    counter(
      "gateway_upstream_retries_total",
      "Attempts that retried a call another node failed",
      ({ counts }, push) => push(counts.retries),
    ),
    counter(
      "gateway_upstream_hedges_total",
      "Attempts that hedged a read another node was slow on",
      ({ counts }, push) => push(counts.hedges),
    ),
    counter(
      "gateway_upstream_state_changes_total",
      "Times the upstream entered each state",
      ({ counts }, push) => {
        for (const [state, n] of counts.statesEntered) push(n, { state });
      },
    ),
    // "max" over workers: each worker judges the node on its own; a state any of them sees is shown
    gauge("gateway_upstream_state", "1 for the upstream's state, 0 for the others", "max", (health, push) => {
      for (const state of UPSTREAM_STATES) push(health.state === state ? 1 : 0, { state });
    }),
    gauge("gateway_upstream_head", "The head its last good probe read", "max", (health, push) => {
      if (health.head !== undefined) push(health.head);
    }),
    gauge("gateway_upstream_lag_blocks", "Blocks behind the label's best head", "max", (health, push) =>
      push(health.lagBlocks),
    ),
    gauge(
      "gateway_upstream_latency_seconds",
      "Its smoothed time to an answer's headers",
      "average",
      // a node that never answered has no latency: no series, rather than a 0 that looks like the best
      (health, push) => {
        if (health.latencyMs > 0) push(health.latencyMs / 1000);
      },
    ),
    gauge(
      "gateway_upstream_error_ratio",
      "The share of its last 100 calls and probes that failed (an attempt a hedge outran did not)",
      "average",
      (health, push) => push(health.observedErrorRate),
    ),
    outstanding(
      "gateway_upstream_in_flight",
      "Calls sent to it and not answered yet, but for those it holds (gateway_upstream_held)",
      (health) => health.inFlight,
    ),
    outstanding(
      "gateway_upstream_held",
      "Calls it holds until something happens: streams and long polls",
      (health) => health.held,
    ),
  ];
}

/** Each label's answer-rule counts, summed over its mounts' groups: one series per label and rule. */
export function answerRules(upstreams: Pick<UpstreamTable, "groups">): MetricValue[] {
  const sums = new Map<string, { label: string; rule: string; value: number }>();
  for (const group of upstreams.groups())
    for (const [rule, value] of group.answers.entries()) {
      const key = `${group.label} ${rule}`;
      const entry = sums.get(key) ?? { label: group.label, rule, value: 0 };
      entry.value += value;
      sums.set(key, entry);
    }
  return [...sums.values()].map(({ label, rule, value }) => ({ labels: { label, rule }, value }));
}

/** Each label's cache counts, summed over its mounts' groups: per label, and per `by` when it is given. */
export function cacheCounts(
  upstreams: Pick<UpstreamTable, "groups">,
  names: readonly (keyof CacheCounts)[],
  by?: string,
): MetricValue[] {
  const sums = new Map<string, MetricValue>();
  for (const group of upstreams.groups()) {
    const cache = group.cache;
    if (cache === undefined) continue;
    for (const name of names) {
      const labels: Record<string, string> =
        by === undefined ? { label: group.label } : { label: group.label, [by]: name };
      const key = JSON.stringify(labels);
      const entry = sums.get(key) ?? { labels, value: 0 };
      sums.set(key, { labels, value: entry.value + cache.counts[name] });
    }
  }
  return [...sums.values()];
}

/** The process's shared layer's counts (one layer, whichever groups use it). */
export function sharedCounts(upstreams: Pick<UpstreamTable, "groups">): MetricValue[] {
  const layers = new Set(
    upstreams.groups().flatMap((group) => (group.cache?.shared ? [group.cache.shared] : [])),
  );
  const sums = { hit: 0, miss: 0, stored: 0, full: 0, error: 0 };
  for (const layer of layers)
    for (const name of Object.keys(sums) as (keyof typeof sums)[]) sums[name] += layer.counts[name];
  return layers.size === 0
    ? []
    : Object.entries(sums).map(([outcome, value]) => ({ labels: { outcome }, value }));
}

/** A size of each label's caches, summed over its mounts' groups. */
export function cacheSizes(
  upstreams: Pick<UpstreamTable, "groups">,
  size: (cache: AnswerCache) => number,
): MetricValue[] {
  const sums = new Map<string, number>();
  for (const group of upstreams.groups())
    if (group.cache !== undefined) sums.set(group.label, (sums.get(group.label) ?? 0) + size(group.cache));
  return [...sums].map(([label, value]) => ({ labels: { label }, value }));
}

/** Each label's served head, the highest of its mounts' groups. */
export function servedHeads(upstreams: Pick<UpstreamTable, "groups">): MetricValue[] {
  const heads = new Map<string, number>();
  for (const group of upstreams.groups())
    if (group.served.height > (heads.get(group.label) ?? -1)) heads.set(group.label, group.served.height);
  return [...heads].map(([label, value]) => ({ labels: { label }, value }));
}
