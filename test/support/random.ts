/**
 * A seeded generator for fuzz tests, so a failure replays: mulberry32, whose 32-bit state is kept in
 * integer arithmetic. (A textbook LCG written as `seed * 1103515245` in doubles loses its low bits past
 * 2^53 and fell into a cycle of about 10,000 draws, which made 8,000 "random" bodies a few hundred.)
 * `next(n)` is an integer in [0, n).
 */
export function seeded(seed: number): { next(n: number): number; pick<T>(list: readonly T[]): T } {
  let state = seed | 0;
  const next = (n: number): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
  return { next, pick: <T>(list: readonly T[]): T => list[next(list.length)] as T };
}
