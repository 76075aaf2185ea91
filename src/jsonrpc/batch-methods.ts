import type { Checked } from "./check.js";

/** The distinct methods a batch's access line names; the rest are summed as `+N more`. */
const MAX_METHODS = 10;

/**
 * A batch's calls for its access line: each method that passed its checks, with its count when more than
 * one (`eth_call×3 eth_getBalance`), and the refused calls as one count (`refused×2`): only the registry's
 * method names, never a caller's text, and at most MAX_METHODS of them.
 */
export function batchMethods(checked: readonly Checked[]): string {
  const counts = new Map<string, number>();
  let refused = 0;
  for (const call of checked) {
    if (call.ok) counts.set(call.method, (counts.get(call.method) ?? 0) + 1);
    else refused += 1;
  }
  const parts = [...counts].slice(0, MAX_METHODS).map(([method, n]) => (n === 1 ? method : `${method}×${n}`));
  if (counts.size > MAX_METHODS) parts.push(`+${counts.size - MAX_METHODS} more`);
  if (refused > 0) parts.push(refused === 1 ? "refused" : `refused×${refused}`);
  return parts.join(" ");
}
