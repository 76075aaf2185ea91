import { scanMembers } from "../jsonrpc/scan.js";
import type { HeadCall } from "../registry/types.js";
import { encodeHeight } from "../upstream/head.js";
import { readHead, withHash } from "../upstream/probe-call.js";
import type { GatewayCalls } from "./gateway-calls.js";
import { heightOf, type Subscription } from "./subscriptions.js";

// After a move (connection.ts), what the client would have missed: the heads between the last one it saw
// and the first one the new node pushes, found by walking back through their parents; the events of the
// blocks since the last one it saw, found with the registry's range query. Held notifications follow.

/** Past this many heads the walk back stops: a longer gap is left as it is (docs/websocket.md). */
const MAX_FILLED_HEADS = 128;

export interface FillContext {
  readonly calls: GatewayCalls;
  /** The member of a notification's params that holds the subscription id. */
  readonly idMember: string;
  /** The head call of the connection's mount: where a range query ends. */
  readonly head: HeadCall;
  /** Sends a notification to the client. */
  readonly send: (text: string) => void;
  /**
   * The widest range, in blocks, a range query of `method` asks at once (the label's `splitAbove`, within
   * `refuseAbove`): wider, a node may refuse it (Reth's `max-blocks-per-filter`, Besu's `max-logs-range`).
   */
  readonly widestRange?: (method: string) => number | undefined;
  /**
   * The node answered a fill's call with an error: the gap cannot be filled, and the connection is closed
   * with 1014 (connection.ts `closeMoved`), as one whose subscription the node refused, rather than carry on
   * past what the client missed.
   */
  readonly failed?: (reason: string) => void;
}

/**
 * One notification's result for `subscription`: sent (under the client's id), dropped as a repeat, or
 * held while a gap before it is filled. `original` is the node's own text, sent as it is when the ids match.
 */
export function deliver(
  subscription: Subscription,
  result: string,
  original: string | undefined,
  context: FillContext,
): void {
  if (subscription.held !== undefined) {
    subscription.held.push(result);
    return;
  }
  const due = subscription.backfillFrom;
  if (due !== undefined) {
    // the node a move found behind the last event sent has pushed one from that height on: it has reached
    // it, and the range query it was owed decides what it replaced and what is news
    const height = subscription.eventHeight(result);
    if (height !== undefined && height >= due) {
      backfillEvents(subscription, context, [result]);
      return;
    }
  }
  const verdict = subscription.judge(result);
  if (verdict === "drop") return;
  if (verdict === "fill") {
    subscription.held = [result];
    fillHeads(subscription, result, context);
    return;
  }
  context.send(
    original !== undefined && subscription.upstreamId === subscription.clientId
      ? original
      : subscription.notification(context.idMember, result),
  );
}

/** Walks back from `first`'s parent to the head after the last one sent, then sends them oldest first. */
function fillHeads(subscription: Subscription, first: string, context: FillContext): void {
  const rule = subscription.kind?.heads;
  const last = subscription.lastNumber;
  if (rule === undefined || last === undefined) {
    release(subscription, [], context);
    return;
  }
  const found: string[] = [];
  const step = (header: string): void => {
    const parent = scanMembers(header)[0]?.get(rule.parent);
    if (parent === undefined || found.length >= MAX_FILLED_HEADS) {
      release(subscription, found, context);
      return;
    }
    const params = JSON.stringify(withHash(rule.byHash.params, JSON.parse(parent) as unknown));
    context.calls.call(rule.byHash.method, params, (answer) => {
      if (answer === undefined) {
        abandon(subscription);
        return;
      }
      if (answer.members.has("error")) {
        cannotFill(subscription, context);
        return;
      }
      const older = answer.members.get("result");
      const height = heightOf(older && scanMembers(older)[0]?.get(rule.number), rule.encoding);
      if (older === undefined || height === undefined || height <= last) {
        release(subscription, found, context);
        return;
      }
      found.push(older);
      if (height === last + 1) {
        release(subscription, found, context);
        return;
      }
      step(older);
    });
  };
  step(first);
}

/**
 * After a move, the events of the blocks from the last one the client saw (or, with none seen, the block
 * it subscribed at) to the new node's head, with the registry's range query, asked in pieces no wider than
 * the label splits a caller's range into, oldest first; what the new subscription
 * pushes meanwhile is held (from `held` on), and the events the query returned are not sent again. A node
 * behind that block is queried once it pushes an event there or later (`deliver`): until it has built that
 * block, the query cannot tell whether its block there is the one the client's events came from.
 */
export function backfillEvents(subscription: Subscription, context: FillContext, held: string[] = []): void {
  subscription.backfillFrom = undefined;
  const rule = subscription.kind?.events;
  const from = subscription.lastNumber ?? subscription.startNumber;
  if (rule === undefined || from === undefined) {
    for (const result of held) deliver(subscription, result, undefined, context);
    return;
  }
  subscription.held = held;
  headHeight(context, (to, lost) => {
    if (lost) {
      abandon(subscription);
      return;
    }
    // the node answered its head call with an error (a rate limit in front of it): the gap's end is
    // unknown, and what it pushes next would pass over the gap unseen
    if (to === undefined && context.head.kind === "jsonrpc") {
      cannotFill(subscription, context);
      return;
    }
    if (to === undefined || to < from) {
      // what was held is judged by its position first: a node whose head lags its own pushes is not
      // asked again for each of them
      release(subscription, [], context);
      if (to !== undefined) subscription.backfillFrom = from;
      return;
    }
    const { filterParam, method } = rule.backfill;
    const given = Array.isArray(subscription.paramsValue) ? subscription.paramsValue[filterParam] : undefined;
    const widest = Math.max(1, context.widestRange?.(method) ?? Number.POSITIVE_INFINITY);
    const found: unknown[] = [];
    const ask = (start: number): void => {
      const end = Math.min(to, start + widest - 1);
      const filter = {
        ...(typeof given === "object" && given !== null ? given : {}),
        [rule.backfill.from]: encodeHeight(start, rule.encoding),
        [rule.backfill.to]: encodeHeight(end, rule.encoding),
      };
      context.calls.call(method, JSON.stringify([filter]), (answer) => {
        if (answer === undefined) {
          abandon(subscription);
          return;
        }
        const piece = parseArray(answer.members.get("result"));
        if (piece === undefined) {
          cannotFill(subscription, context);
          return;
        }
        for (const event of piece) found.push(event);
        if (end < to) ask(end + 1);
        else sendFound(found);
      });
    };
    const sendFound = (events: unknown[]): void => {
      const held = subscription.held ?? [];
      subscription.held = undefined;
      takeBackReplaced(subscription, events, from, context);
      for (const event of events) deliver(subscription, JSON.stringify(event), undefined, context);
      // Everything up to the query's last block has been sent: the new subscription's copies are repeats.
      if ((subscription.lastNumber ?? Number.NEGATIVE_INFINITY) <= to) {
        subscription.lastNumber = to;
        subscription.lastIndex = Number.POSITIVE_INFINITY;
        subscription.afterMove = true;
      }
      for (const result of held) deliver(subscription, result, undefined, context);
    };
    ask(from);
  });
}

/**
 * When the new node's block at the last height sent is another block than the one the client's events came
 * from (the nodes disagreed on a recent block: a reorganisation one of them had not seen), those events are
 * sent again with `removed: true`, as a node sends them in its own reorganisation, and the new node's events
 * at that height are news, not repeats. Its events there name their block: none of them names the old one.
 */
function takeBackReplaced(
  subscription: Subscription,
  events: readonly unknown[],
  from: number,
  context: FillContext,
): void {
  const member = subscription.kind?.events?.hash;
  const sent = subscription.sentAtLast;
  if (member === undefined || sent === undefined || sent.height !== from) return;
  if (events.some((event) => JSON.stringify(memberOf(event, member)) === sent.hash)) return;
  for (const result of sent.results)
    context.send(subscription.notification(context.idMember, withRemoved(result)));
  subscription.sentAtLast = undefined;
  if (subscription.lastNumber === from) subscription.lastIndex = Number.NEGATIVE_INFINITY;
}

function memberOf(value: unknown, member: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[member] : undefined;
}

/** An event's result as sent, marked taken back. */
function withRemoved(result: string): string {
  return JSON.stringify({ ...(JSON.parse(result) as object), removed: true });
}

/** Records the head at which an events subscription was made, where a later range query starts. */
export function recordStart(subscription: Subscription, context: FillContext): void {
  headHeight(context, (height) => {
    subscription.startNumber ??= height;
  });
}

/**
 * The fill's socket was lost (its node went, and the connection moves again): what it found and what that
 * node pushed meanwhile are not sent, so that the next node's fill starts from the last one the client was
 * sent, as this one did. Sent, they would have moved that mark past the part of the gap not filled yet.
 */
function abandon(subscription: Subscription): void {
  subscription.held = undefined;
}

/**
 * The node answered a fill's call with an error (a range past its cap, more logs than it returns at once, a
 * read it failed): nothing found nor held is sent, and the connection is closed (`failed`). Sent, what the
 * node pushed after the gap would move the client's mark past it, and the client would never learn of it.
 */
function cannotFill(subscription: Subscription, context: FillContext): void {
  abandon(subscription);
  context.failed?.("the gap a move left could not be filled on another node");
}

/** Sends the heads found (walked back, so newest first), each judged, then what was held. */
function release(subscription: Subscription, found: readonly string[], context: FillContext): void {
  const held = subscription.held ?? [];
  subscription.held = undefined;
  for (const result of [...found].reverse()) deliver(subscription, result, undefined, context);
  for (const result of held) deliver(subscription, result, undefined, context);
}

/** The node's head height; `lost` when the socket went before the node answered. */
function headHeight(context: FillContext, then: (height: number | undefined, lost: boolean) => void): void {
  const { head } = context;
  if (head.kind !== "jsonrpc") {
    then(undefined, false);
    return;
  }
  const params = head.params === undefined ? undefined : JSON.stringify(head.params);
  context.calls.call(head.method, params, (answer) => {
    let height: number | undefined;
    try {
      height = answer === undefined ? undefined : readHead(head, answer.text);
    } catch {
      height = undefined;
    }
    then(height, answer === undefined);
  });
}

function parseArray(text: string | undefined): unknown[] | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
