import type { ServerResponse } from "node:http";
import { sendJson } from "../errors/respond.js";
import { GatewayError } from "../errors/table.js";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import { encodeHeight } from "../upstream/head.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";
import { fetchByTier, type TierFields } from "./archive.js";
import type { RangeSplit } from "./range-plan.js";

/** Where a split range notes how many sub-ranges it ran as: each is priced as a call (docs/compute-units.md). */
export interface SplitFields extends TierFields {
  parts: number | undefined;
}

/**
 * Sub-ranges in flight at once: enough to spread one wide query over a label's nodes, few enough that one
 * caller cannot take every connection to them.
 */
const IN_FLIGHT = 4;

/**
 * 7, for a range call wider than its split limit (range-plan.ts): the range runs as sub-ranges of at most
 * `split.size` blocks, each an ordinary read that goes to a node that has its last block, and their lists
 * are merged in order into one answer with the caller's id. The first sub-range that fails fails the call
 * (its node's error object, or the gateway's error), as does a merged answer past the answer size cap.
 */
export function relaySplit(
  call: UpstreamCall,
  split: RangeSplit,
  res: ServerResponse,
  note: SplitFields,
  done: RelayDone,
): void {
  new SplitRun(call, split, res, note, done).start();
}

class SplitRun {
  readonly #call: UpstreamCall;
  readonly #split: RangeSplit;
  readonly #res: ServerResponse;
  readonly #note: SplitFields;
  readonly #done: RelayDone;
  /** Each sub-range's list, in range order, once it is in. */
  readonly #parts: unknown[][] = [];
  #nextFrom: number;
  /** Whether the sub-range up to a settled tag (range-plan.ts `tail`) went, when the range has one. */
  #tailSent = false;
  #inFlight = 0;
  #bytes = 0;
  #over = false;

  constructor(
    call: UpstreamCall,
    split: RangeSplit,
    res: ServerResponse,
    note: SplitFields,
    done: RelayDone,
  ) {
    this.#call = call;
    this.#split = split;
    this.#res = res;
    this.#note = note;
    this.#done = done;
    this.#nextFrom = split.from;
  }

  start(): void {
    this.#call.group.answers.add("range_split");
    for (let i = 0; i < IN_FLIGHT; i++) this.#launch();
  }

  /** Whether a sub-range is still to go: a numbered one, or the last, up to a settled tag. */
  #more(): boolean {
    return this.#nextFrom <= this.#split.to || (this.#split.tail !== undefined && !this.#tailSent);
  }

  #launch(): void {
    const { to, size, tail } = this.#split;
    if (this.#over || !this.#more()) return;
    const from = this.#nextFrom <= to ? this.#nextFrom : (tail?.from ?? this.#nextFrom);
    const last = this.#nextFrom <= to ? Math.min(from + size - 1, to) : undefined;
    if (last === undefined) this.#tailSent = true;
    else this.#nextFrom = last + 1;
    const index = this.#parts.length;
    this.#parts.push([]);
    this.#inFlight++;
    const sub: UpstreamCall = {
      ...this.#call,
      // the tag's sub-range goes where the whole call would: to a node at the head the label served
      body: this.#body(
        index + 1,
        from,
        last === undefined ? tail?.to : encodeHeight(last, this.#split.read.block.encoding),
      ),
      atLeast: last ?? this.#call.atLeast,
      reads: undefined,
      split: undefined,
      tier: undefined,
      byHash: false,
    };
    const settled = (error: GatewayError | undefined, answer?: WholeAnswer) =>
      this.#settled(index, error, answer);
    // an old range a full node may have dropped (registry `archive.history`): each sub-range by tier
    const { tier } = this.#call;
    if (tier !== undefined && tier.batch === undefined)
      fetchByTier(sub, tier, this.#res, this.#note, settled);
    else fetchWhole(sub, this.#res, this.#note, settled);
  }

  /**
   * The caller's call with its range narrowed to `from`..`to`, `from` a height in the interface's encoding,
   * `to` one already encoded (or, for the last sub-range of a range whose end only the node can place, that
   * end as the caller wrote it).
   */
  #body(id: number, from: number, to: unknown): string {
    const { read } = this.#split;
    const range = {
      ...read.filter,
      [read.rule.from]: encodeHeight(from, read.block.encoding),
      [read.rule.to]: to,
    };
    const { param } = read.rule;
    const params = param === "params" ? range : Object.assign([...read.params], { [param]: range });
    return JSON.stringify({ jsonrpc: "2.0", id, method: read.call.method, params });
  }

  #settled(index: number, error: GatewayError | undefined, answer: WholeAnswer | undefined): void {
    this.#inFlight--;
    if (this.#over) return;
    if (error !== undefined || answer === undefined) {
      // neither an error nor an answer is a bug: the boundary logs it with its stack
      this.#fail(error ?? new Error("a sub-range ended with neither an answer nor an error"));
      return;
    }
    this.#bytes += answer.body.length;
    if (this.#bytes > this.#call.maxBytes) {
      this.#fail(
        new GatewayError("BLOCK_RANGE_TOO_LARGE", {
          ...this.#split.limits,
          maxResponseBytes: this.#call.maxBytes,
          reason: "the merged answer would pass the answer size cap: ask for a narrower range",
        }),
      );
      return;
    }
    let parsed: { result?: unknown; error?: unknown } | undefined;
    try {
      parsed = JSON.parse(answer.body.toString("utf8")) as typeof parsed;
    } catch {
      parsed = undefined;
    }
    if (parsed?.error !== undefined) {
      this.#nodeError(answer.statusCode, parsed.error);
      return;
    }
    if (answer.statusCode !== 200 || !Array.isArray(parsed?.result)) {
      this.#fail(new GatewayError("UPSTREAM_BAD_RESPONSE"));
      return;
    }
    this.#parts[index] = parsed.result;
    if (this.#more()) this.#launch();
    else if (this.#inFlight === 0) this.#finish();
  }

  #finish(): void {
    this.#over = true;
    this.#note.parts = this.#parts.length;
    const result = JSON.stringify(this.#parts.flat());
    sendJson(this.#res, 200, `{"jsonrpc":"2.0","id":${this.#callerId()},"result":${result}}`);
    this.#done();
  }

  /** A node refused a sub-range: the caller gets its error object, as if it had asked that node itself. */
  #nodeError(statusCode: number, error: unknown): void {
    this.#over = true;
    const body = `{"jsonrpc":"2.0","id":${this.#callerId()},"error":${JSON.stringify(error)}}`;
    sendJson(this.#res, statusCode, body);
    this.#done();
  }

  #fail(error: unknown): void {
    this.#over = true;
    this.#done(error);
  }

  #callerId(): string {
    return this.#split.read.call.id ?? "null";
  }
}
