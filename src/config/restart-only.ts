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
