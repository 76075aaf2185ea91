import type { Worker } from "node:cluster";
import type { FilterSpan } from "../answers/range-plan.js";
import { SHARED_HEAD_KEEP_MS } from "../answers/served-head.js";
import { HANDLE_IDLE_MS, type SharedHandle } from "../upstream/node-states.js";
import {
  type HeadMessage,
  isShareMessage,
  type RecalledMessage,
  type ShareMessage,
} from "./cluster-shares.js";

interface Kept<Value> {
  value: Value;
  until: number;
}

/** A recall the primary holds until a worker tells of one of its filters, or RECALL_HOLD_MS pass. */
interface HeldRecall {
  readonly group: string;
  readonly names: readonly string[];
  readonly answer: () => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * How long a recall of filters the primary has never heard of waits for a worker's word of them. Each worker
 * has its own channel to the primary: a caller that made a filter through one worker and polls it through
 * another at once may have its poll's recall arrive before the first worker's word that it was made. Well
 * under a worker's own wait for the answer (cluster-shares.ts RECALL_MS).
 */
export const RECALL_HOLD_MS = 150;

/**
 * The primary's side of what its workers share without Redis (cluster-shares.ts): each label's highest
 * served head, told to every other worker as it rises and to a worker as it starts; and each filter's node
 * and caller, which a worker that did not see it made asks for. Kept in the primary's memory, for as long
 * as Redis would keep them.
 */
export class ClusterStore {
  readonly #heads = new Map<string, Kept<number>>();
  readonly #handles = new Map<string, Kept<string>>();
  /** A filter's range as it was made, by its node's key. */
  readonly #spans = new Map<string, FilterSpan>();
  readonly #workers: () => readonly Worker[];
  readonly #now: () => number;
  readonly #held = new Set<HeldRecall>();
  #sweptAt = 0;

  constructor(workers: () => readonly Worker[], now: () => number = Date.now) {
    this.#workers = workers;
    this.#now = now;
  }

  /** A message from `from`, if it is one of the shares'; false for any other message. */
  take(from: Worker, message: unknown): boolean {
    if (!isShareMessage(message)) return false;
    this.#take(from, message);
    return true;
  }

  /** The heads the others served, to a worker that just started. */
  seed(worker: Worker): void {
    const now = this.#now();
    for (const [label, head] of this.#heads)
      if (head.until > now)
        send(worker, { type: "gateway:share:head", label, height: head.value, seed: true });
  }

  #take(from: Worker, message: ShareMessage): void {
    const now = this.#now();
    switch (message.type) {
      case "gateway:share:head": {
        const { label, height } = message;
        const stored = this.#heads.get(label);
        if (
          !Number.isSafeInteger(height) ||
          (stored !== undefined && stored.until > now && height <= stored.value)
        )
          return;
        this.#heads.set(label, { value: height, until: now + SHARED_HEAD_KEEP_MS });
        const rise: HeadMessage = { type: "gateway:share:head", label, height };
        for (const worker of this.#workers()) if (worker !== from) send(worker, rise);
        return;
      }
      case "gateway:share:handle": {
        const { group, owner, name, node, span } = message;
        const until = now + HANDLE_IDLE_MS;
        const nodeKey = `${group}:node:${owner}:${name}`;
        const ownerKey = `${group}:owner:${name}`;
        if (node !== undefined) {
          this.#handles.set(nodeKey, { value: node, until });
          this.#handles.set(ownerKey, { value: owner, until });
          if (span === undefined) this.#spans.delete(nodeKey);
          else this.#spans.set(nodeKey, span);
          this.#heard(group, name);
        } else {
          for (const key of [nodeKey, ownerKey]) {
            const kept = this.#handles.get(key);
            if (kept !== undefined && kept.until > now) kept.until = until;
          }
        }
        this.#sweep(now);
        return;
      }
      case "gateway:share:recall": {
        const { recall, group, owner, names } = message;
        const answer = () => send(from, this.#recalled(recall, group, owner, names));
        if (names.some((name) => this.#live(`${group}:owner:${name}`) !== undefined)) {
          answer();
          return;
        }
        const held: HeldRecall = {
          group,
          names,
          answer,
          timer: setTimeout(() => {
            this.#held.delete(held);
            answer();
          }, RECALL_HOLD_MS),
        };
        this.#held.add(held);
        return;
      }
      default:
        return;
    }
  }

  #live(key: string): string | undefined {
    const kept = this.#handles.get(key);
    return kept !== undefined && kept.until > this.#now() ? kept.value : undefined;
  }

  #recalled(recall: number, group: string, owner: string, names: readonly string[]): RecalledMessage {
    const handles: SharedHandle[] = names.map((name) => {
      const nodeKey = `${group}:node:${owner}:${name}`;
      const node = this.#live(nodeKey);
      return {
        node,
        owner: this.#live(`${group}:owner:${name}`),
        span: node === undefined ? undefined : this.#spans.get(nodeKey),
      };
    });
    return { type: "gateway:share:recalled", recall, handles };
  }

  /** A worker told of a filter it made: recalls held for it are answered now. */
  #heard(group: string, name: string): void {
    for (const held of this.#held)
      if (held.group === group && held.names.includes(name)) {
        clearTimeout(held.timer);
        this.#held.delete(held);
        held.answer();
      }
  }

  /** Forgets the filters past their keeping, at most once a minute. */
  #sweep(now: number): void {
    if (now - this.#sweptAt < 60_000) return;
    this.#sweptAt = now;
    for (const [key, kept] of this.#handles)
      if (kept.until <= now) {
        this.#handles.delete(key);
        this.#spans.delete(key);
      }
  }
}

function send(worker: Worker, message: ShareMessage): void {
  if (!worker.isDead() && worker.isConnected()) worker.send(message, () => {});
}
