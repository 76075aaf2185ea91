import type { Upstream } from "./upstreams.js";

/** Node-made states (filters) whose node is remembered, the most recently used first to stay. */
const HANDLES = 10_000;
/** The names one caller's makes are remembered by, at most: a caller making more cannot push others' out. */
const NAMES_PER_OWNER = 1_000;
/** Callers whose names are remembered, at most: past it the oldest caller's go first. */
const OWNERS_NAMED = 1_000;
const HANDLE_IDLE_MS = 10 * 60_000;

interface Made {
  readonly upstream: Upstream;
  readonly usedAt: number;
}

/**
 * The states nodes made for callers and name by their results (filters: registry `reads.handles`), for one
 * label and mount: which node each is on, so that its uses go there (`nodeOf`), and whose it is, so that
 * another caller's use of it is refused (`madeByAnother`). Each is kept while used within HANDLE_IDLE_MS
 * (geth drops a filter not polled for 5 minutes).
 */
export class NodeStates {
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

  /** A call made state on `upstream` that its result names: its uses go there, and are `owner`'s alone. */
  made(owner: string, named: string, upstream: Upstream): void {
    const name = handleName(named);
    // by its caller too: two nodes may name their filters alike, and one caller's is never another's
    const key = `${owner}\n${name}`;
    const made = { upstream, usedAt: Date.now() };
    this.#handles.delete(key);
    this.#handles.set(key, made);
    if (this.#handles.size > HANDLES) this.#handles.delete(this.#handles.keys().next().value as string);
    this.#owners.delete(owner);
    this.#owners.set(owner, made);
    if (this.#owners.size > HANDLES) this.#owners.delete(this.#owners.keys().next().value as string);
    this.#name(owner, name, made.usedAt);
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
    const again = { upstream: made.upstream, usedAt: now };
    this.#handles.set(key, again);
    this.#owners.set(owner, again);
    this.#name(owner, name, now);
    return made.upstream;
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
