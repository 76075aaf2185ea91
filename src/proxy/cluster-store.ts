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
        const live = (key: string) => {
          const kept = this.#handles.get(key);
          return kept !== undefined && kept.until > now ? kept.value : undefined;
        };
        const handles: SharedHandle[] = names.map((name) => ({
          node: live(`${group}:node:${owner}:${name}`),
          owner: live(`${group}:owner:${name}`),
          span:
            live(`${group}:node:${owner}:${name}`) === undefined
              ? undefined
              : this.#spans.get(`${group}:node:${owner}:${name}`),
        }));
        const answer: RecalledMessage = { type: "gateway:share:recalled", recall, handles };
        send(from, answer);
        return;
      }
      default:
        return;
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
