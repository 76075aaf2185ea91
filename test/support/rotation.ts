import { eventually } from "./eventually.js";
import type { RunningGateway } from "./gateway.js";

/**
 * Resolves once every upstream of the gateway's served config (or of `label`) is healthy: the prober's first
 * verdicts are in, and each node is in rotation with its head read.
 */
export function everyNodeInRotation(gw: RunningGateway, label?: string, timeoutMs = 10_000): Promise<void> {
  const groups = () => gw.gateway.upstreams.groups().filter((g) => label === undefined || g.label === label);
  return eventually(
    () => groups().every((g) => g.members.every((m) => m.health.state === "healthy")),
    timeoutMs,
    `every node${label === undefined ? "" : ` of ${label}`} in rotation`,
  ).then(() => undefined);
}
