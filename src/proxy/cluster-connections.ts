import type { Worker } from "node:cluster";
import {
  type ConnectionCaps,
  type ConnectionCounts,
  LocalConnectionCounts,
  type Release,
} from "../ws/connection-counts.js";

// With workers, the WebSocket connection caps (`limits.ws.maxConnectionsPerKey`, `maxConnectionsPerIp`)
// hold for the instance: each upgrade asks the primary, which counts every worker's connections in one
// place. The primary runs one message at a time, so two upgrades on two workers cannot both take the
// last slot. The messages share cluster-shares.ts's `gateway:share:` prefix, which answerPrimary
// (worker-link.ts) leaves to their own listeners; they carry `reservation`, never `id`, which the primary
// would read as the answer to one of its questions.

/** A worker asks for a slot for one connection. */
interface ReserveMessage {
  readonly type: "gateway:share:connection";
  readonly reservation: number;
  readonly client: string;
  readonly ip: string;
  readonly caps: ConnectionCaps;
}

/** The primary's answer: whether the slot is the worker's. */
interface GrantedMessage {
  readonly type: "gateway:share:connection-granted";
  readonly reservation: number;
  readonly granted: boolean;
}

/** The worker's connection closed (or never opened): its slot is free. */
interface ReleasedMessage {
  readonly type: "gateway:share:connection-released";
  readonly reservation: number;
}

/**
 * How long an upgrade waits for the primary's answer. The primary answers at once from memory; one that
 * has not answered by then is stuck or gone (and with it the shared listener), and the worker counts the
 * connection on its own, as a single process does, rather than hold the upgrade.
 */
const PRIMARY_ANSWER_MS = 1_000;

/** A worker's side: each upgrade's slot is the primary's to give. */
export class WorkerConnectionCounts implements ConnectionCounts {
  /** The count when the primary cannot be asked or does not answer in time. */
  readonly #own = new LocalConnectionCounts();
  readonly #waiting = new Map<number, (granted: boolean) => void>();
  #next = 0;
  readonly #listener = (message: Partial<GrantedMessage> | undefined) => {
    if (message?.type !== "gateway:share:connection-granted" || message.reservation === undefined) return;
    const waiting = this.#waiting.get(message.reservation);
    if (waiting !== undefined) waiting(message.granted === true);
    // a grant after the deadline: the upgrade was decided here, so the primary's slot goes back
    else if (message.granted === true) released(message.reservation);
  };

  constructor() {
    process.on("message", this.#listener);
  }

  reserve(
    client: string,
    ip: string,
    caps: ConnectionCaps,
    decided: (release: Release | undefined) => void,
  ): void {
    const reservation = ++this.#next;
    const ownCount = () => decided(this.#own.take(client, ip, caps));
    const answered = (granted: boolean) => {
      clearTimeout(timer);
      this.#waiting.delete(reservation);
      decided(granted ? releaseOnce(reservation) : undefined);
    };
    const timer = setTimeout(() => {
      this.#waiting.delete(reservation);
      ownCount();
    }, PRIMARY_ANSWER_MS);
    this.#waiting.set(reservation, answered);
    const ask: ReserveMessage = {
      type: "gateway:share:connection",
      reservation,
      client,
      ip,
      caps: {
        maxConnectionsPerKey: caps.maxConnectionsPerKey,
        maxConnectionsPerIp: caps.maxConnectionsPerIp,
      },
    };
    if (!toPrimary(ask)) {
      clearTimeout(timer);
      this.#waiting.delete(reservation);
      ownCount();
    }
  }

  close(): void {
    process.off("message", this.#listener);
  }
}

function releaseOnce(reservation: number): Release {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    released(reservation);
  };
}

function released(reservation: number): void {
  toPrimary({ type: "gateway:share:connection-released", reservation } satisfies ReleasedMessage);
}

/** False when the primary cannot be told (its channel closed: the worker's own exit follows). */
function toPrimary(message: ReserveMessage | ReleasedMessage): boolean {
  if (!process.connected || process.send === undefined) return false;
  process.send(message, undefined, {}, () => {});
  return true;
}

/**
 * The primary's side: one count for every worker, and each worker's slots, which go back as its
 * connections close, or all at once when the worker exits (its connections went with it).
 */
export class ClusterConnections {
  readonly #counts = new LocalConnectionCounts();
  /** Each worker's held slots, by worker id and the worker's number for the reservation. */
  readonly #held = new Map<number, Map<number, Release>>();

  /** A message from `from`, if it is about connections; false for any other message. */
  take(from: Worker, message: unknown): boolean {
    const m = message as Partial<ReserveMessage | ReleasedMessage> | undefined;
    if (m?.type === "gateway:share:connection-released") {
      const held = this.#held.get(from.id);
      if (m.reservation === undefined || held === undefined) return true;
      held.get(m.reservation)?.();
      held.delete(m.reservation);
      return true;
    }
    if (m?.type !== "gateway:share:connection") return false;
    const { reservation, client, ip, caps } = m as ReserveMessage;
    const release = this.#counts.take(client, ip, caps);
    if (release !== undefined) {
      const held = this.#held.get(from.id) ?? new Map<number, Release>();
      this.#held.set(from.id, held.set(reservation, release));
    }
    const answer: GrantedMessage = {
      type: "gateway:share:connection-granted",
      reservation,
      granted: release !== undefined,
    };
    if (!from.isDead() && from.isConnected()) from.send(answer, () => {});
    return true;
  }

  /** A worker exited: its connections closed with it. */
  gone(worker: Worker): void {
    for (const release of this.#held.get(worker.id)?.values() ?? []) release();
    this.#held.delete(worker.id);
  }
}
