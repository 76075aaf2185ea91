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
 * The ratio a / b from rounds in which both were measured seconds apart: the median of each round's own
 * ratio, so a slow stretch of a shared VM weighs on both targets of its round and not on one. `compare`
 * in compare.ts runs even rounds forwards and odd ones in reverse, and the order itself showed (one target
 * read 0.88–0.90× the other in every forward round and 0.94–0.97× in every reverse one): with rounds in
 * both orders the result is the geometric mean of the two orders' medians, so neither order outvotes the
 * other.
 */
export function pairedRatio(a: readonly number[], b: readonly number[]): number {
  const forward: number[] = [];
  const reverse: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    (i % 2 === 0 ? forward : reverse).push((a[i] as number) / (b[i] as number));
  }
  if (reverse.length === 0) return middle(forward);
  return Math.sqrt(middle(forward) * middle(reverse));
}

/** The median that averages the two middle values of an even count. */
function middle(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const half = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[half] as number)
    : ((sorted[half - 1] as number) + (sorted[half] as number)) / 2;
}
