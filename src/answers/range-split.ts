import type { ServerResponse } from "node:http";
import { sendJson } from "../errors/respond.js";
import { GatewayError } from "../errors/table.js";
import type { WholeAnswer } from "../upstream/buffered-answer.js";
import { encodeHeight } from "../upstream/head.js";
import { fetchWhole, type RelayDone, type UpstreamCall } from "../upstream/policy.js";
import { fetchByTier, TIER_HEADER, type TierFields } from "./archive.js";
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
  /** The label the caller called: each sub-range the archive answers names the archive label in the note. */
  readonly #label: string | undefined;
  /** How many sub-ranges the archive tier answered: each is priced at the archive's factor, the rest not. */
  #archived = 0;

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
    this.#label = note.label;
  }

  start(): void {
    this.#call.group.answers.add("range_split");
    // every attempt of every part listens for the caller leaving (upstream/attempt.ts), one listener each
    // and left in place, cheaper on the relayed call's path than taking it off: a split into more than a
    // few parts passes an emitter's ten by design, and without this printed a leak warning per request
    this.#res.setMaxListeners(0);
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
    const settled = (error: GatewayError | undefined, answer?: WholeAnswer, served?: "full" | "archive") => {
      if (served === "archive" && !this.#over) this.#archived++;
      this.#settled(index, error, answer, served);
    };
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

  #settled(
    index: number,
    error: GatewayError | undefined,
    answer: WholeAnswer | undefined,
    served: "full" | "archive" | undefined,
  ): void {
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
      this.#nodeError(answer.statusCode, parsed.error, served);
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
    const parts = this.#parts.length;
    this.#note.parts = parts;
    const result = JSON.stringify(this.#parts.flat());
    const body = `{"jsonrpc":"2.0","id":${this.#callerId()},"result":${result}}`;
    sendJson(this.#res, 200, body, this.#tiered(parts));
    this.#done();
  }

  /**
   * The answer's tier, by its parts, in the note and the header. Each sub-range went by tier with this one
   * note, which says where the last one answered, so it is set again here: a split the archive answered in
   * part is priced as a batch so answered is (pipeline/exchange-units.ts archivePriced), its archive parts at
   * the archive's factor, the rest at a full node's; it stays under the label called (`x-upstream-tier:
   * full+archive`, the access line's tier `archive`), and only one the archive answered whole is counted
   * under the archive label (docs/upstreams.md, "Archive").
   */
  #tiered(parts: number): Readonly<Record<string, string>> | undefined {
    const tier = this.#call.tier;
    if (tier === undefined || tier.batch !== undefined) return undefined;
    const note = this.#note;
    const archived = this.#archived;
    note.label = archived === parts ? tier.archiveLabel : this.#label;
    note.tier = archived === 0 ? "full" : "archive";
    note.archivedMethods =
      archived === 0 ? undefined : Array.from({ length: archived }, () => this.#split.read.call.method);
    return { [TIER_HEADER]: archived === 0 ? "full" : archived === parts ? "archive" : "full+archive" };
  }

  /**
   * A node refused a sub-range: the caller gets its error object, as if it had asked that node itself, and
   * it is counted where that node is (the tier it answered from), as that read alone would be.
   */
  #nodeError(statusCode: number, error: unknown, served: "full" | "archive" | undefined): void {
    this.#over = true;
    const body = `{"jsonrpc":"2.0","id":${this.#callerId()},"error":${JSON.stringify(error)}}`;
    const tier = this.#call.tier;
    let headers: Readonly<Record<string, string>> | undefined;
    if (tier !== undefined && tier.batch === undefined && served !== undefined) {
      this.#note.label = served === "archive" ? tier.archiveLabel : this.#label;
      this.#note.tier = served;
      headers = { [TIER_HEADER]: served };
    }
    sendJson(this.#res, statusCode, body, headers);
    this.#done();
  }

  /** The gateway's error: no tier answered it, whatever sub-ranges the archive answered before. */
  #fail(error: unknown): void {
    this.#over = true;
    if (this.#call.tier !== undefined && this.#call.tier.batch === undefined) {
      this.#note.label = this.#label;
      this.#note.tier = undefined;
    }
    this.#done(error);
  }

  #callerId(): string {
    return this.#split.read.call.id ?? "null";
  }
}
