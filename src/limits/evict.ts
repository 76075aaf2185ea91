/**
 * Shrinks a full table of limits to `keep` entries by forgetting those with the earliest `at` (the one
 * whose forgetting forgives least), only as many of equal `at` as must go. One sort: a table that frees an
 * eighth each time it fills costs a flood of new ids O(log n) each.
 */
export function forgetEarliest<T>(table: Map<string, T>, keep: number, at: (entry: T) => number): void {
  if (table.size <= keep) return;
  const times = new Float64Array(table.size);
  let i = 0;
  for (const entry of table.values()) times[i++] = at(entry);
  times.sort();
  const over = table.size - keep;
  const cut = times[over - 1] as number;
  let ties = over - times.indexOf(cut);
  for (const [id, entry] of table) {
    const t = at(entry);
    if (t < cut) table.delete(id);
    else if (t === cut && ties > 0) {
      table.delete(id);
      ties -= 1;
    }
  }
}

/** How many entries a full table of `maxEntries` keeps once swept: it frees at least an eighth. */
export function keptAfterSweep(maxEntries: number): number {
  return maxEntries - Math.max(1, Math.floor(maxEntries / 8));
}
