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
  // written out rather than spread, sliced, mapped and joined: this runs for every batch with the access log on
  let out = "";
  let shown = 0;
  for (const [method, n] of counts) {
    if (shown === MAX_METHODS) break;
    out += `${shown === 0 ? "" : " "}${n === 1 ? method : `${method}×${n}`}`;
    shown++;
  }
  if (counts.size > MAX_METHODS) out += ` +${counts.size - MAX_METHODS} more`;
  if (refused > 0) out += `${out === "" ? "" : " "}${refused === 1 ? "refused" : `refused×${refused}`}`;
  return out;
}
