// The answer cache's series for one label, read as an operator reads them: GET /metrics on the gateway's
// operator API (gateway_cache_*, docs/cache.md).

export interface CacheSeries {
  readonly hit: number;
  readonly miss: number;
  readonly coalesced: number;
  readonly evictions: number;
  /** Bytes of answers held, as the budget counts them. */
  readonly bytes: number;
  readonly entries: number;
}

export async function cacheSeries(operatorPort: number, label: string): Promise<CacheSeries> {
  const response = await fetch(`http://127.0.0.1:${operatorPort}/metrics`);
  const text = await response.text();
  const value = (name: string, outcome?: string) => seriesValue(text, name, { label, outcome });
  return {
    hit: value("gateway_cache_requests_total", "hit"),
    miss: value("gateway_cache_requests_total", "miss"),
    coalesced: value("gateway_cache_requests_total", "coalesced"),
    evictions: value("gateway_cache_evictions_total"),
    bytes: value("gateway_cache_bytes"),
    entries: value("gateway_cache_entries"),
  };
}

/** The sum of a series' samples in Prometheus' text format whose labels include `want`; 0 if none. */
export function seriesValue(
  text: string,
  name: string,
  want: Readonly<Record<string, string | undefined>>,
): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf("}");
    const labels = new Map(
      [...line.slice(name.length + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(want).every(([key, wanted]) => wanted === undefined || labels.get(key) === wanted))
      sum += Number(
        line
          .slice(close + 1)
          .trim()
          .split(" ")[0],
      );
  }
  return sum;
}
