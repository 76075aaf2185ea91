/**
 * What the answer rules did on one label (src/answers/), for the operator's metrics
 * (`gateway_answer_rules_total`, docs/operations.md): reads that waited for a node at the served head and
 * whether one came, archive reads and refusals, ranges split or refused, by-hash reads asked again.
 */
export type AnswerRule =
  | "head_wait"
  | "head_wait_in_vain"
  | "archive_direct"
  | "archive_again"
  | "archive_required"
  | "range_split"
  | "range_refused"
  | "by_hash_again";

export class AnswerCounts {
  readonly #counts = new Map<AnswerRule, number>();

  add(rule: AnswerRule): void {
    this.#counts.set(rule, (this.#counts.get(rule) ?? 0) + 1);
  }

  entries(): IterableIterator<[AnswerRule, number]> {
    return this.#counts.entries();
  }

  /** A reload's new group goes on from the old one's counts, so the counters never go back. */
  carryFrom(other: AnswerCounts): void {
    for (const [rule, n] of other.entries()) this.#counts.set(rule, (this.#counts.get(rule) ?? 0) + n);
  }
}
