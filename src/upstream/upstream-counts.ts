import type { UpstreamState } from "./health.js";

/**
 * What happened to an upstream's attempts since the process started, for the operator's series
 * (metrics/gateway-metrics.ts): each attempt's outcome (answered; failed, by an error or a 5xx or 429;
 * dismissed, outrun by another node's answer), how many were retries of a call another node failed and
 * how many hedges of one another node was slow on, and the states it moved to.
 */
export class UpstreamCounts {
  answered = 0;
  failed = 0;
  dismissed = 0;
  retries = 0;
  hedges = 0;
  readonly statesEntered = new Map<UpstreamState, number>();

  entered(state: UpstreamState): void {
    this.statesEntered.set(state, (this.statesEntered.get(state) ?? 0) + 1);
  }
}
