import type { FilterSpan } from "../answers/range-plan.js";
import type { Upstream } from "./upstreams.js";

/** Node-made states (filters) whose node is remembered, the most recently used first to stay. */
const HANDLES = 10_000;
/** The names one caller's makes are remembered by, at most: a caller making more cannot push others' out. */
const NAMES_PER_OWNER = 1_000;
/** Callers whose names are remembered, at most: past it the oldest caller's go first. */
const OWNERS_NAMED = 1_000;
/** How long a state is kept past its last use, here and where other instances or workers read it. */
export const HANDLE_IDLE_MS = 10 * 60_000;

/** How often a state in use is kept alive where other instances read it (`HandleShare.kept`), at most. */
const SHARE_KEEP_MS = 60_000;

interface Made {
  readonly upstream: Upstream;
  readonly usedAt: number;
  /** When the share last heard of it: made, kept or recalled. */
  readonly sharedAt: number;
  /** A filter's range as it was made, which its node scans when its logs are asked (range-plan.ts). */
  readonly span: FilterSpan | undefined;
}

/** What another instance or worker saw of a state's name (shared-handles.ts). */
export interface SharedHandle {
  /** The node the asking caller's state of that name is on, by its name. */
  readonly node: string | undefined;
  /** The caller that last made a state of that name, if another instance saw one made. */
  readonly owner: string | undefined;
  /** The range of the asking caller's filter, as it was made, if it has one. */
  readonly span?: FilterSpan | undefined;
}

/**
 * Where the states this process sees made are told to the other instances and workers, and asked of them
 * (shared-handles.ts, through the Redis of `sharedLimits`): each sees only the calls that land on it.
 */
export interface HandleShare {
  made(owner: string, name: string, node: string, span: FilterSpan | undefined): void;
  /** `owner` still uses its state `name`: the others keep it as long as this process does. */
  kept(owner: string, name: string): void;
  recall(owner: string, names: readonly string[]): Promise<readonly SharedHandle[]>;
}

/**
 * The states nodes made for callers and name by their results (filters: registry `reads.handles`), for one
 * label and mount: which node each is on, so that its uses go there (`nodeOf`), and whose it is, so that
 * another caller's use of it is refused (`madeByAnother`). Each is kept while used within HANDLE_IDLE_MS
 * (geth drops a filter not polled for 5 minutes).
 */
export class NodeStates {
  /** The other instances' view, with `sharedLimits`; undefined keeps each process's states its own. */
  share: HandleShare | undefined = undefined;
  readonly #members: () => readonly Upstream[];
  /** Each state by its caller and name, and the node it is on. */
  readonly #handles = new Map<string, Made>();
  /**
   * Each caller's node for such state: its filters are all made on one node, whose names for them are its
   * own (nodes that number filters in turn, as Nethermind does, would name two on two nodes alike).
   */
  readonly #owners = new Map<string, Made>();
  /**
   * The names each caller made or used lately, with when: another caller's use of one is refused. Kept
   * per caller, each its NAMES_PER_OWNER newest, so that a caller making filters by the thousand drops only
   * its own names, never another's.
   */
  readonly #named = new Map<string, Map<string, number>>();

  /** `members`: the group's nodes, by whose names the share gives a state's node. */
  constructor(members: () => readonly Upstream[]) {
    this.#members = members;
  }

  /**
   * A call made state on `upstream` that its result names: its uses go there, and are `owner`'s alone; a
   * filter's range (`span`) bounds the uses that scan it.
   */
  made(owner: string, named: string, upstream: Upstream, span?: FilterSpan): void {
    const name = handleName(named);
    this.#remember(owner, name, upstream, Date.now(), span);
    this.share?.made(owner, name, upstream.name, span);
  }

  #remember(
    owner: string,
    name: string,
    upstream: Upstream,
    now: number,
    span: FilterSpan | undefined,
  ): void {
    // by its caller too: two nodes may name their filters alike, and one caller's is never another's
    const key = `${owner}\n${name}`;
    const made = { upstream, usedAt: now, sharedAt: now, span };
    this.#handles.delete(key);
    this.#handles.set(key, made);
    if (this.#handles.size > HANDLES) this.#handles.delete(this.#handles.keys().next().value as string);
    this.#owners.delete(owner);
    this.#owners.set(owner, made);
    if (this.#owners.size > HANDLES) this.#owners.delete(this.#owners.keys().next().value as string);
    this.#name(owner, name, made.usedAt);
  }

  /** Tells the share of every state made or used here lately: Redis answers again after states were made without it. */
  shareAll(): void {
    const share = this.share;
    if (share === undefined) return;
    const now = Date.now();
    for (const [key, made] of this.#handles) {
      if (now - made.usedAt > HANDLE_IDLE_MS) continue;
      // a handle's name never holds a line break; its owner (a key id or an address) neither
      const at = key.lastIndexOf("\n");
      share.made(key.slice(0, at), key.slice(at + 1), made.upstream.name, made.span);
    }
  }

  /**
   * Whether `used` names the state another caller made or used lately, and `owner` none by that name: its
   * node would answer `owner` with another caller's filter (Nethermind numbers filters in turn, so their
   * names are easy to guess), or let `owner` remove it. Else `owner`'s use of its own name keeps it named.
   * A name this process did not see made is not known here.
   */
  madeByAnother(owner: string, used: string): boolean {
    const name = handleName(used);
    const now = Date.now();
    const usedAt = this.#named.get(owner)?.get(name);
    if (usedAt !== undefined && now - usedAt <= HANDLE_IDLE_MS) {
      this.#name(owner, name, now);
      return false;
    }
    return this.namedByAnother(owner, used);
  }

  /** Whether another caller than `owner` made or used a state named `used` lately. */
  namedByAnother(owner: string, used: string): boolean {
    const name = handleName(used);
    const now = Date.now();
    for (const [other, names] of this.#named) {
      const usedAt = other === owner ? undefined : names.get(name);
      if (usedAt !== undefined && now - usedAt <= HANDLE_IDLE_MS) return true;
    }
    return false;
  }

  /** The node a caller's next filter is made on: the one its live filters are on, if any. */
  ownerNode(owner: string): Upstream | undefined {
    const made = this.#owners.get(owner);
    if (made === undefined) return undefined;
    if (Date.now() - made.usedAt > HANDLE_IDLE_MS || !made.upstream.health.inRotation) {
      this.#owners.delete(owner);
      return undefined;
    }
    return made.upstream;
  }

  /** The node that made the state named `used` for `owner`, if this process saw it made and it was used lately. */
  nodeOf(owner: string, used: string): Upstream | undefined {
    const name = handleName(used);
    const key = `${owner}\n${name}`;
    const made = this.#handles.get(key);
    if (made === undefined) return undefined;
    this.#handles.delete(key);
    const now = Date.now();
    // a filter on a node gone from rotation is as good as gone: another node says it knows no such filter,
    // which SDKs answer by making a new one (viem's -32000), where the dead node's refusal they retry
    if (now - made.usedAt > HANDLE_IDLE_MS || !made.upstream.health.inRotation) return undefined;
    // the others keep it while it is polled here: a poll that lands on one of them later still finds it
    const tell = this.share !== undefined && now - made.sharedAt > SHARE_KEEP_MS;
    if (tell) this.share?.kept(owner, name);
    const again = { ...made, usedAt: now, sharedAt: tell ? now : made.sharedAt };
    this.#handles.set(key, again);
    this.#owners.set(owner, again);
    this.#name(owner, name, now);
    return made.upstream;
  }

  /** The range of `owner`'s filter named `used`, as it was made, if this process knows it (`recall`). */
  spanOf(owner: string, used: string): FilterSpan | undefined {
    const made = this.#handles.get(`${owner}\n${handleName(used)}`);
    return made === undefined || Date.now() - made.usedAt > HANDLE_IDLE_MS ? undefined : made.span;
  }

  /**
   * Learns from the share, before stage 6 plans a call (plan-upstream.ts), what the other instances saw of
   * the states `used` names that this process knows nothing of: the node `owner`'s is on, or that another
   * caller's has that name. A promise only when there is something to ask; one that never fails: with the
   * share away, this process decides alone, as it does without one.
   */
  recall(owner: string, used: readonly string[]): Promise<void> | undefined {
    const share = this.share;
    if (share === undefined) return undefined;
    const now = Date.now();
    const unknown = used.map(handleName).filter((name) => !this.#knows(owner, name, now));
    if (unknown.length === 0) return undefined;
    return share.recall(owner, unknown).then(
      (seen) => {
        const at = Date.now();
        unknown.forEach((name, i) => {
          const {
            node,
            owner: maker,
            span,
          } = seen[i] ?? { node: undefined, owner: undefined, span: undefined };
          const upstream = node === undefined ? undefined : this.#members().find((m) => m.name === node);
          if (upstream !== undefined) this.#remember(owner, name, upstream, at, span);
          else if (maker !== undefined && maker !== owner) this.#name(maker, name, at);
        });
      },
      () => {},
    );
  }

  /** Whether this process knows where `owner`'s state `name` is, or that it is another caller's. */
  #knows(owner: string, name: string, now: number): boolean {
    const made = this.#handles.get(`${owner}\n${name}`);
    if (made !== undefined && now - made.usedAt <= HANDLE_IDLE_MS) return true;
    return this.namedByAnother(owner, name);
  }

  #name(owner: string, name: string, usedAt: number): void {
    let names = this.#named.get(owner);
    if (names === undefined) {
      names = new Map();
      if (this.#named.size >= OWNERS_NAMED) this.#named.delete(this.#named.keys().next().value as string);
    }
    // the caller and its name both last: the oldest go first
    this.#named.delete(owner);
    this.#named.set(owner, names);
    names.delete(name);
    names.set(name, usedAt);
    if (names.size > NAMES_PER_OWNER) names.delete(names.keys().next().value as string);
  }
}

/**
 * A state's name as its node reads it: a node that parses a filter's id as a number (Nethermind) takes
 * `0x01` and `0X1` for `0x1`, so another spelling is no other filter.
 */
function handleName(name: string): string {
  if (!/^0x[0-9a-f]+$/i.test(name)) return name;
  const digits = name
    .slice(2)
    .toLowerCase()
    .replace(/^0+(?=.)/, "");
  return `0x${digits}`;
}
