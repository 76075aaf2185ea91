import { randomBytes, randomInt } from "node:crypto";
import { scanMembers } from "../jsonrpc/scan.js";
import type {
  HeadEncoding,
  SubscriptionEnd,
  SubscriptionKind,
  SubscriptionRules,
} from "../registry/types.js";
import { decode } from "../upstream/head.js";

// The subscriptions a WebSocket connection holds, remembered so that they can be made again on another
// node when theirs goes (connection.ts), with what the registry says about them (registry `subscriptions`).

/** The events sent from one block: its height, its hash (as a source token) and their results. */
export interface SentBlock {
  readonly height: number;
  readonly hash: string;
  readonly results: string[];
}

/** Events kept per subscription to take a replaced block's back: more in one block are not. */
const KEPT_EVENTS = 256;

/** Events passed on undecoded that a subscription holds before it judges them (`passedOn`). */
const UNREAD_EVENTS = 16;

/** What a notification's position says about it: pass it on, drop it as a repeat, or fill a gap first. */
export type Verdict = "send" | "drop" | "fill";

/** One subscription the client holds: how to make it again, and what it has seen. */
export class Subscription {
  readonly method: string;
  /** The subscribe call's params as sent, copied out of the message that carried them. */
  readonly params: string | undefined;
  readonly paramsValue: unknown;
  /** The id the client was given, as its source token (`"0x1a"`, with its quotes). */
  clientId: string;
  /** The id the node it is on now gave it. */
  upstreamId: string;
  readonly kind: SubscriptionKind | undefined;
  readonly pinned: boolean;
  /** The notifications after which the node holds it no more (registry `ends`): its notifications are read. */
  readonly ends: SubscriptionEnd | undefined;
  /** Its notification says the node's head changed with no height (registry `headChanges`): each is read. */
  readonly headChange: boolean;
  /** The notification method's token, from the last notification (`"eth_subscription"`). */
  notificationMethod: string | undefined;
  /** Heads: the last height the client was sent. Events: the height of the last event sent. */
  lastNumber: number | undefined;
  /** Events: the place in its block of the last event sent. */
  lastIndex = Number.NEGATIVE_INFINITY;
  /** Events: the head height when it was made, where a range query starts if no event came. */
  startNumber: number | undefined;
  /** Set by a move: a gap before the first head the new node pushes is filled. */
  fillNext = false;
  /**
   * Set by a move: until the new node pushes something past the last one sent, what it pushes at or before
   * it is a repeat of what the client saw, and is dropped. Otherwise the node's own order holds: a head
   * that replaces one at its height, or a log mined again after a reorg took it back, is news.
   */
  afterMove = false;
  /**
   * Set by a move to a node behind the last event sent (or the block subscribed at): the height its range
   * query starts at, made once the node pushes an event there or later (gap-fill.ts `backfillEvents`).
   */
  backfillFrom: number | undefined;
  /** Notifications' results held back while a gap is filled, in arrival order. */
  held: string[] | undefined;
  /**
   * The last notification passed on undecoded (the connection's only subscription, never moved): its
   * position is read only when it is needed (`catchUp`), so a fan-out pays no decoding per message. An
   * events subscription whose events name their block's hash keeps its last few (`passedOn`).
   */
  unread: string | Buffer | undefined;
  /** Events named by block hash: the last notifications passed on undecoded, oldest first. */
  #unreadEvents: (string | Buffer)[] | undefined;
  /**
   * Events named by block hash (registry `events.hash`): those sent from the last height's block, and its
   * hash. A move to a node whose block there is another sends them again with `removed: true`, as the node
   * would have in its own reorganisation (gap-fill.ts `backfillEvents`).
   */
  sentAtLast: SentBlock | undefined;

  constructor(fields: {
    method: string;
    params: string | undefined;
    paramsValue: unknown;
    id: string;
    kind: SubscriptionKind | undefined;
    pinned: boolean;
    ends: SubscriptionEnd | undefined;
    headChange?: boolean;
  }) {
    this.method = fields.method;
    this.params = fields.params;
    this.paramsValue = fields.paramsValue;
    this.clientId = fields.id;
    this.upstreamId = fields.id;
    this.kind = fields.kind;
    this.pinned = fields.pinned;
    this.ends = fields.ends;
    this.headChange = fields.headChange ?? false;
  }

  /** Whether its notifications must be read: it carries a position, may end, or its id on the node changed. */
  get watched(): boolean {
    return (
      this.kind !== undefined ||
      this.ends !== undefined ||
      this.headChange ||
      this.upstreamId !== this.clientId
    );
  }

  /**
   * Whether `result` (a notification's source text) is its last: the node has ended it (an extrinsic's final
   * status), answers an unsubscribe after it with `false`, and the client may never send one.
   */
  endsWith(result: string): boolean {
    const rule = this.ends;
    if (rule === undefined) return false;
    let value: unknown;
    try {
      value = JSON.parse(result);
    } catch {
      return false;
    }
    for (const name of rule.at?.split(".") ?? []) value = isObject(value) ? value[name] : undefined;
    if (typeof value === "string") return rule.status.includes(value);
    // serde's enum with data: {"finalized": "0x…"}
    return isObject(value) && rule.status.some((status) => Object.hasOwn(value, status));
  }

  /** A notification passed on undecoded: `catchUp` reads its position when a move needs it. */
  passedOn(data: string | Buffer, idMember: string): void {
    if (this.kind?.events?.hash === undefined) {
      this.unread = data;
      return;
    }
    // the events of one block come one by one, and a move may take that block's back: those since the
    // last judged are kept undecoded, and judged every few (`sentAtLast` keeps the last block's)
    this.#unreadEvents ??= [];
    this.#unreadEvents.push(data);
    if (this.#unreadEvents.length >= UNREAD_EVENTS) this.catchUp(idMember);
  }

  /** Records the position of the notifications passed on undecoded, if any. */
  catchUp(idMember: string): void {
    const unread = this.#unreadEvents ?? (this.unread === undefined ? [] : [this.unread]);
    this.unread = undefined;
    this.#unreadEvents = undefined;
    for (const data of unread) {
      const members = scanMembers(typeof data === "string" ? data : data.toString("utf8"))[0];
      const pushed = members === undefined ? undefined : readNotification(members, idMember);
      if (pushed !== undefined && pushed.id === this.upstreamId) this.judge(pushed.result);
    }
  }

  /** Judges one notification's result by its position, and records it as sent when it is to be sent. */
  judge(result: string): Verdict {
    const { kind } = this;
    if (kind?.heads !== undefined) {
      const fields = scanMembers(result)[0];
      const height = heightOf(fields?.get(kind.heads.number), kind.heads.encoding);
      if (height === undefined) return "send";
      const last = this.lastNumber;
      if (this.afterMove && last !== undefined && height <= last) return "drop";
      this.afterMove = false;
      if (this.fillNext && last !== undefined && height > last + 1) {
        this.fillNext = false;
        return "fill";
      }
      this.fillNext = false;
      this.lastNumber = height;
      return "send";
    }
    if (kind?.events !== undefined) {
      const fields = scanMembers(result)[0];
      if (fields === undefined) return "send";
      const height = heightOf(fields.get(kind.events.number), kind.events.encoding);
      const index = heightOf(fields.get(kind.events.index), kind.events.encoding);
      // A log taken back by a reorganisation is news, whatever its position; after it, a log mined again
      // from that position on is too, not a move's repeat: the last position sent goes back to before it.
      if (fields.get("removed") === "true") {
        // the node takes its own block's events back: none of them is the client's to lose again
        if (height === this.sentAtLast?.height) this.sentAtLast = undefined;
        if (height === undefined || index === undefined) this.afterMove = false;
        else if (
          this.lastNumber !== undefined &&
          (height < this.lastNumber || (height === this.lastNumber && index <= this.lastIndex))
        ) {
          this.lastNumber = height;
          this.lastIndex = index - 1;
        }
        return "send";
      }
      if (height === undefined || index === undefined) return "send";
      const last = this.lastNumber;
      const repeat = last !== undefined && (height < last || (height === last && index <= this.lastIndex));
      if (this.afterMove && repeat) return "drop";
      this.afterMove = false;
      if (kind.events.hash !== undefined) this.#keepSent(result, height, fields.get(kind.events.hash));
      this.lastNumber = height;
      this.lastIndex = index;
    }
    return "send";
  }

  /**
   * The block a notification shows the node has, from its result's source text: a header's (with its hash
   * and its parent's, where the rule names its hash), an event's block's, or one a reorganisation took back
   * (an event the node pushed `removed`, with its block's hash); undefined for another kind, or none.
   */
  shownBlock(result: string): ShownBlock | undefined {
    const { kind } = this;
    const rule = kind?.heads ?? kind?.events;
    if (rule === undefined) return undefined;
    const fields = scanMembers(result)[0];
    const height = heightOf(fields?.get(rule.number), rule.encoding);
    if (height === undefined) return undefined;
    const events = kind?.events;
    if (events !== undefined && fields?.get("removed") === "true")
      return {
        height,
        removed: true,
        hash: events.hash === undefined ? undefined : textOf(fields?.get(events.hash)),
      };
    const heads = kind?.heads;
    if (heads?.hash === undefined) return { height };
    return { height, hash: textOf(fields?.get(heads.hash)), parent: textOf(fields?.get(heads.parent)) };
  }

  /** The same, from a whole notification passed on undecoded (`passedOn`). */
  pushedBlock(data: string | Buffer, idMember: string): ShownBlock | undefined {
    if (this.kind === undefined) return undefined;
    const members = scanMembers(typeof data === "string" ? data : data.toString("utf8"))[0];
    const result = members === undefined ? undefined : readNotification(members, idMember)?.result;
    return result === undefined ? undefined : this.shownBlock(result);
  }

  /** An event's height, from its result's source text; undefined when it names none. */
  eventHeight(result: string): number | undefined {
    const rule = this.kind?.events;
    return rule === undefined ? undefined : heightOf(scanMembers(result)[0]?.get(rule.number), rule.encoding);
  }

  /** Keeps an event sent from the block `hash` at `height`, with those sent from it before. */
  #keepSent(result: string, height: number, hash: string | undefined): void {
    if (hash === undefined) return;
    const kept = this.sentAtLast;
    if (kept === undefined || kept.height !== height || kept.hash !== hash)
      this.sentAtLast = { height, hash, results: [result] };
    else if (kept.results.length < KEPT_EVENTS) kept.results.push(result);
  }

  /** A notification of `result` under the client's id, as the node would have sent it. */
  notification(idMember: string, result: string): string {
    const method = this.notificationMethod ?? JSON.stringify(this.kind?.events?.notification ?? "");
    return `{"jsonrpc":"2.0","method":${method},"params":{${JSON.stringify(idMember)}:${this.clientId},"result":${result}}}`;
  }
}

/** A notification's subscription id and result, as source tokens, from its top-level members. */
function readNotification(
  members: ReadonlyMap<string, string>,
  idMember: string,
): { id: string; result: string } | undefined {
  const params = members.get("params");
  const inner = params === undefined ? undefined : scanMembers(params)[0];
  const id = inner?.get(idMember);
  const result = inner?.get("result");
  return id === undefined || result === undefined ? undefined : { id, result };
}

/** An id of `like`'s kind (a string, a number) that `held` has no entry for. */
function freshId(like: string, held: ReadonlyMap<string, unknown>): string {
  for (;;) {
    const fresh = like.startsWith('"')
      ? `"0x${randomBytes(16).toString("hex")}"`
      : String(randomInt(2 ** 47, 2 ** 48));
    if (!held.has(fresh)) return fresh;
  }
}

/** The subscription ids an unsubscribe call's params may name, as source tokens. */
function idsIn(paramsValue: unknown): string[] {
  const values = Array.isArray(paramsValue)
    ? paramsValue
    : typeof paramsValue === "object" && paramsValue !== null
      ? Object.values(paramsValue)
      : [];
  return values.filter((v) => typeof v === "string" || typeof v === "number").map((v) => JSON.stringify(v));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A height from a member's source token, or undefined when it is not one in `encoding`. */
/**
 * A block a notification shows: its height, and a header's own hash and its parent's where it names them;
 * `removed`, a block the node took back (an event pushed `removed: true`), with its hash where it names it.
 */
export interface ShownBlock {
  readonly height: number;
  readonly hash?: string | undefined;
  readonly parent?: string | undefined;
  readonly removed?: true;
}

/** A JSON string member's value from its source token; undefined for another token, or none. */
function textOf(token: string | undefined): string | undefined {
  if (token === undefined || token.charCodeAt(0) !== 34) return undefined;
  try {
    const value: unknown = JSON.parse(token);
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

export function heightOf(token: string | undefined, encoding: HeadEncoding): number | undefined {
  if (token === undefined) return undefined;
  try {
    return decode(JSON.parse(token), encoding, "height");
  } catch {
    return undefined;
  }
}

/** A connection's subscriptions, by the id the client knows and by the id the node uses. */
export class RememberedSubscriptions {
  readonly rules: SubscriptionRules | undefined;
  readonly #byClientId = new Map<string, Subscription>();
  readonly #byUpstreamId = new Map<string, Subscription>();
  /** How many are watched (Subscription.watched): while none is, notifications pass undecoded. */
  #watched = 0;

  constructor(rules: SubscriptionRules | undefined) {
    this.rules = rules;
  }

  get size(): number {
    return this.#byClientId.size;
  }

  get watching(): boolean {
    return this.#watched > 0;
  }

  /**
   * The subscription whose notifications may pass undecoded: the only one, never moved, filling nothing.
   * Anything the node pushes on the connection is then its notification.
   */
  solo(): Subscription | undefined {
    if (this.#byClientId.size !== 1) return undefined;
    const [only] = this.#byClientId.values();
    // one that may end is read, to forget it at its last notification
    return only !== undefined &&
      only.ends === undefined &&
      !only.headChange &&
      only.upstreamId === only.clientId &&
      only.held === undefined &&
      !only.fillNext &&
      !only.afterMove &&
      only.backfillFrom === undefined
      ? only
      : undefined;
  }

  /** Whether one of them cannot move to another node (registry `pinned`). */
  get pinned(): boolean {
    for (const subscription of this.#byClientId.values()) if (subscription.pinned) return true;
    return false;
  }

  isPinned(method: string): boolean {
    return this.rules?.pinned.includes(method) ?? false;
  }

  all(): Subscription[] {
    return [...this.#byClientId.values()];
  }

  /**
   * Remembers a subscription the node has just confirmed with `id`. The client knows it by that id, unless
   * the client holds it already for a subscription that moved here from another node (a node that numbers
   * its ids in order, as Besu does, may hand out the id another node gave): then by a new one
   * (`clientId` differs), which the subscribe call's answer must carry.
   */
  add(method: string, params: string | undefined, paramsValue: unknown, id: string): Subscription {
    const subscription = new Subscription({
      method,
      // A copy: a slice would keep the whole message it came in alive.
      params: params === undefined ? undefined : Buffer.from(params).toString(),
      paramsValue,
      id,
      kind: this.#kindOf(method, paramsValue),
      pinned: this.isPinned(method),
      ends: this.rules?.ends?.[method],
      headChange: this.rules?.headChanges.includes(method) ?? false,
    });
    if (this.#byClientId.has(id)) subscription.clientId = freshId(id, this.#byClientId);
    this.#byClientId.set(subscription.clientId, subscription);
    this.#byUpstreamId.set(id, subscription);
    if (subscription.watched) this.#watched++;
    return subscription;
  }

  remove(subscription: Subscription | undefined): void {
    if (subscription === undefined || this.#byClientId.get(subscription.clientId) !== subscription) return;
    this.#byClientId.delete(subscription.clientId);
    this.#forgetUpstreamId(subscription);
    if (subscription.watched) this.#watched--;
  }

  /**
   * After a move: the subscription is `id` on the new node. Its id on the lost node may be the one the new
   * node gave another subscription made again before it (ids numbered in order): that one keeps it.
   */
  rebind(subscription: Subscription, id: string): void {
    const watched = subscription.watched;
    this.#forgetUpstreamId(subscription);
    subscription.upstreamId = id;
    this.#byUpstreamId.set(id, subscription);
    if (subscription.watched !== watched) this.#watched += watched ? -1 : 1;
  }

  #forgetUpstreamId(subscription: Subscription): void {
    if (this.#byUpstreamId.get(subscription.upstreamId) === subscription)
      this.#byUpstreamId.delete(subscription.upstreamId);
  }

  /** The subscription an unsubscribe call's params name, by the id the client knows. */
  named(paramsValue: unknown): Subscription | undefined {
    if (this.size === 0) return undefined;
    for (const id of idsIn(paramsValue)) {
      const found = this.#byClientId.get(id);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /**
   * An unsubscribe naming none the client holds, but an id the node gave one the client knows by another (a
   * move): that id's token, and one the node holds for none, to send in its place. Sent as it is, it would
   * end the client's subscription; sent so, the node answers it as an id it does not hold.
   */
  shadowed(paramsValue: unknown): readonly [string, string] | undefined {
    if (this.size === 0) return undefined;
    for (const id of idsIn(paramsValue)) {
      const found = this.#byUpstreamId.get(id);
      if (found !== undefined && found.clientId !== id) return [id, freshId(id, this.#byUpstreamId)];
    }
    return undefined;
  }

  /** The subscription a notification is for, with its result's source text. */
  notified(members: ReadonlyMap<string, string>): { subscription: Subscription; result: string } | undefined {
    if (this.rules === undefined) return undefined;
    const pushed = readNotification(members, this.rules.idMember);
    const subscription = pushed === undefined ? undefined : this.#byUpstreamId.get(pushed.id);
    if (subscription === undefined || pushed === undefined) return undefined;
    subscription.notificationMethod = members.get("method");
    subscription.catchUp(this.rules.idMember);
    return { subscription, result: pushed.result };
  }

  #kindOf(method: string, paramsValue: unknown): SubscriptionKind | undefined {
    const first = Array.isArray(paramsValue) ? paramsValue[0] : undefined;
    return this.rules?.kinds.find(
      (kind) => kind.subscribe.includes(method) && (kind.first === undefined || kind.first === first),
    );
  }
}
