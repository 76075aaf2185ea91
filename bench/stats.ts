export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

/**
 * The median of the per-round ratios a[i] / b[i]. Two targets measured seconds apart in the same round
 * share that moment's machine; the ratio of two medians mixes rounds and lets a slow stretch of a shared
 * VM land on one target only.
 */
export function pairedRatio(a: readonly number[], b: readonly number[]): number {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) ratios.push((a[i] as number) / (b[i] as number));
  return median(ratios);
}
