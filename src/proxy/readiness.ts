import type { UpstreamTable } from "../upstream/upstreams.js";

/** Whether a process can serve, and if not, why (GET /readyz). */
export interface ReadyReport {
  readonly ready: boolean;
  readonly reasons: readonly string[];
}

/**
 * A proxy is ready once its public listener listens (by then its registry and config are loaded and its
 * key store read: it does not start otherwise) and while at least one upstream of some label is in
 * rotation. It turns not-ready as a graceful shutdown begins, `limits.shutdownDelayMs` before its
 * listener closes, so a load balancer stops sending first.
 */
export class Readiness {
  #listening = false;
  #stopping = false;
  readonly #table: Pick<UpstreamTable, "groups">;

  constructor(table: Pick<UpstreamTable, "groups">) {
    this.#table = table;
  }

  listening(): void {
    this.#listening = true;
  }

  stopping(): void {
    this.#stopping = true;
  }

  report(): ReadyReport {
    const reasons: string[] = [];
    if (!this.#listening) reasons.push("not listening yet");
    if (this.#stopping) reasons.push("shutting down");
    const inRotation = this.#table.groups().some((group) => group.members.some((m) => m.health.inRotation));
    if (!inRotation) reasons.push("no upstream of any label is in rotation");
    return { ready: reasons.length === 0, reasons };
  }
}
