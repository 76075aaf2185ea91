import type { FilterSpan } from "../answers/range-plan.js";
import type { UpstreamGroup } from "../upstream/group.js";
import type { HandleShare, SharedHandle } from "../upstream/node-states.js";

// Without Redis, a cluster's workers share through their primary what a caller must see the same whichever
// worker its connection lands on (docs/deployment.md, "Workers on one machine"): each label's served head
// and the nodes of the filters callers made. The messages go over node:cluster's IPC channel; the primary
// keeps them (cluster-store.ts) and tells the other workers.

/** A worker's served head rose: the primary keeps the highest and tells the other workers. */
export interface HeadMessage {
  readonly type: "gateway:share:head";
  readonly label: string;
  readonly height: number;
  /** A head handed to a worker as it starts: a reading, not a block the chain just made. */
  readonly seed?: boolean;
}

/** A filter was made through a worker (`node` set), or polled there (its keeping renewed). */
export interface HandleMessage {
  readonly type: "gateway:share:handle";
  readonly group: string;
  readonly owner: string;
  readonly name: string;
  readonly node?: string;
  /** A filter's range as it was made (node-states.ts `span`). */
  readonly span?: FilterSpan;
}

/**
 * A worker asks for filters it did not see made; the primary answers with the same number. Not `id`: the
 * primary reads an `id` from a worker as the answer to its own question (worker-link.ts `ask`).
 */
export interface RecallMessage {
  readonly type: "gateway:share:recall";
  readonly recall: number;
  readonly group: string;
  readonly owner: string;
  readonly names: readonly string[];
}

export interface RecalledMessage {
  readonly type: "gateway:share:recalled";
  readonly recall: number;
  readonly handles: readonly SharedHandle[];
}

export type ShareMessage = HeadMessage | HandleMessage | RecallMessage | RecalledMessage;

export function isShareMessage(message: unknown): message is ShareMessage {
  const type = (message as { type?: unknown } | null)?.type;
  return typeof type === "string" && type.startsWith("gateway:share:");
}

/**
 * How long a worker waits for the primary's answer to a recall: a poll of a filter this worker did not see
 * made waits this long at most, then goes where the choice sends it, as without a primary.
 */
const RECALL_MS = 250;

/** What a served config shares beyond this process: its groups' heads, or their filters. */
export interface GroupShare {
  attach(groups: readonly UpstreamGroup[]): void;
  detach(groups: readonly UpstreamGroup[]): void;
  close(): void | Promise<void>;
}

/** A worker's side: its groups' rises go to the primary, and what the others served comes back. */
export class WorkerHeads implements GroupShare {
  readonly #groups = new Map<string, Set<UpstreamGroup>>();
  readonly #listener = (message: unknown) => {
    if (!isShareMessage(message) || message.type !== "gateway:share:head") return;
    for (const group of this.#groups.get(message.label) ?? [])
      group.served.raiseFromPeer(message.height, message.seed !== true);
  };

  constructor() {
    process.on("message", this.#listener);
  }

  attach(groups: readonly UpstreamGroup[]): void {
    for (const group of groups) {
      const label = group.label;
      this.#groups.set(label, (this.#groups.get(label) ?? new Set<UpstreamGroup>()).add(group));
      group.served.onRise = (height) => {
        toPrimary({ type: "gateway:share:head", label, height });
        return undefined;
      };
    }
  }

  detach(groups: readonly UpstreamGroup[]): void {
    for (const group of groups) {
      group.served.onRise = undefined;
      this.#groups.get(group.label)?.delete(group);
    }
  }

  close(): void {
    process.off("message", this.#listener);
  }
}

/** A worker's side: the filters made here go to the primary, and the others' are asked of it. */
export class WorkerHandles implements GroupShare {
  readonly #waiting = new Map<number, (handles: readonly SharedHandle[]) => void>();
  #nextId = 0;
  readonly #listener = (message: unknown) => {
    if (!isShareMessage(message) || message.type !== "gateway:share:recalled") return;
    this.#waiting.get(message.recall)?.(message.handles);
  };

  constructor() {
    process.on("message", this.#listener);
  }

  attach(groups: readonly UpstreamGroup[]): void {
    for (const group of groups) group.states.share = this.#shareOf(`${group.label}:${group.mount}`);
  }

  detach(groups: readonly UpstreamGroup[]): void {
    for (const group of groups) group.states.share = undefined;
  }

  close(): void {
    process.off("message", this.#listener);
    for (const answer of this.#waiting.values()) answer([]);
  }

  #shareOf(group: string): HandleShare {
    return {
      made: (owner, name, node, span) =>
        toPrimary({ type: "gateway:share:handle", group, owner, name, node, ...(span && { span }) }),
      kept: (owner, name) => toPrimary({ type: "gateway:share:handle", group, owner, name }),
      recall: (owner, names) => this.#recall(group, owner, names),
    };
  }

  #recall(group: string, owner: string, names: readonly string[]): Promise<readonly SharedHandle[]> {
    const id = ++this.#nextId;
    return new Promise((resolve) => {
      const done = (handles: readonly SharedHandle[]) => {
        clearTimeout(timer);
        this.#waiting.delete(id);
        resolve(handles);
      };
      const timer = setTimeout(() => done([]), RECALL_MS);
      this.#waiting.set(id, done);
      if (!toPrimary({ type: "gateway:share:recall", recall: id, group, owner, names })) done([]);
    });
  }
}

/** False when the primary cannot be told (its channel closed: the worker's own exit follows). */
function toPrimary(message: HeadMessage | HandleMessage | RecallMessage): boolean {
  if (!process.connected || process.send === undefined) return false;
  process.send(message, undefined, {}, () => {});
  return true;
}
