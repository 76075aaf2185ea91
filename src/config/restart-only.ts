import type { GatewayConfig } from "./types.js";

/**
 * Settings a reload (SIGHUP) cannot change in a running proxy: its listeners and their socket timeouts,
 * its process layout, and what it opened or started with (metrics, traces, the log, Redis, the account
 * store). README, "The proxy binary".
 */
const RESTART_ONLY: readonly (readonly string[])[] = [
  ["listen"],
  ["operator"],
  ["workers"],
  ["metrics"],
  ["tracing"],
  ["log", "level"],
  ["sharedLimits"],
  ["accounts"],
  ["limits", "maxHeaderBytes"],
  ["limits", "maxHeaders"],
  ["limits", "requestTimeoutMs"],
  ["limits", "headersTimeoutMs"],
  ["limits", "connectionsCheckingIntervalMs"],
  ["limits", "keepAliveTimeoutMs"],
  ["limits", "socketIdleTimeoutMs"],
];

/** The restart-only settings that differ between the running config and a reloaded one, as dotted paths. */
export function changedRestartOnly(running: GatewayConfig, next: GatewayConfig): string[] {
  const at = (config: GatewayConfig, path: readonly string[]) =>
    JSON.stringify(path.reduce<unknown>((value, name) => (value as Record<string, unknown>)?.[name], config));
  return RESTART_ONLY.filter((path) => at(running, path) !== at(next, path)).map((path) => path.join("."));
}

/**
 * `next` with the running config's restart-only settings: what a reload serves, so that every part of the
 * process reads the values its listeners and what it opened still run with (stage 1's `limits.maxHeaders`
 * as the listener's), as the warning that names a changed one says. `next` itself is left as it is.
 */
export function withRestartOnlyOf(running: GatewayConfig, next: GatewayConfig): GatewayConfig {
  const kept: Record<string, unknown> = { ...next };
  for (const path of RESTART_ONLY) {
    let to = kept;
    let from = running as unknown as Record<string, unknown> | undefined;
    for (const name of path.slice(0, -1)) {
      to[name] = { ...(to[name] as Record<string, unknown>) };
      to = to[name] as Record<string, unknown>;
      from = from?.[name] as Record<string, unknown> | undefined;
    }
    const last = path[path.length - 1] as string;
    if (from === undefined || from[last] === undefined) delete to[last];
    else to[last] = from[last];
  }
  return kept as unknown as GatewayConfig;
}
