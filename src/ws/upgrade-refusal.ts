import type { Duplex } from "node:stream";
import type { GatewayConfig } from "../config/types.js";
import { upgradeRefusal } from "../errors/respond.js";
import type { ErrorCode } from "../errors/table.js";
import type { UsageRecorder } from "../keys/usage.js";
import type { Logger } from "../log.js";
import { type GatewayMetrics, resultOf } from "../metrics/gateway-metrics.js";
import type { ErrorBoundary } from "../pipeline/boundary.js";
import type { RequestTrace } from "../tracing/tracing.js";

/**
 * How a WebSocket upgrade is refused (upgrade.ts): before the client's handshake completes, so as an HTTP
 * response, traced, counted, logged and charged to its key as an HTTP request's refusal is. Made once per
 * served config, not per upgrade.
 */
export class UpgradeRefusals {
  readonly #config: GatewayConfig;
  readonly #logger: Logger;
  readonly #boundary: ErrorBoundary;
  readonly #metrics: GatewayMetrics | undefined;
  readonly #usage: UsageRecorder | undefined;

  constructor(
    config: GatewayConfig,
    logger: Logger,
    boundary: ErrorBoundary,
    metrics: GatewayMetrics | undefined,
    usage: UsageRecorder | undefined,
  ) {
    this.#config = config;
    this.#logger = logger;
    this.#boundary = boundary;
    this.#metrics = metrics;
    this.#usage = usage;
  }

  refuse(
    socket: Duplex,
    error: unknown,
    label: string | undefined,
    requestId: string,
    trace: RequestTrace | undefined,
    keyId?: string,
  ): void {
    const refusal = this.#boundary.caught(error, "websocket upgrade", { label });
    endUpgrade(trace, refusal.status, refusal.code, undefined);
    // counted and logged as an HTTP request's refusal is: a failure always, a refusal with the access log
    this.#metrics?.upgradeRefused(
      label ?? "none",
      refusal.code,
      refusal.status,
      (keyId ?? refusal.keyId) !== undefined,
    );
    const result = resultOf(refusal.code, refusal.status);
    const failed = result === "upstream" || result === "gateway";
    if (failed || this.#config.log.access)
      this.#logger.log(failed ? "warn" : "info", "websocket refused", {
        requestId,
        label,
        key: keyId ?? refusal.keyId,
        error: refusal.code,
        status: refusal.status,
      });
    // a keyed upgrade refused (its settings, its network, its rate or quota, its connections, no node) is
    // one of its key's errors, as an HTTP call's refusal is: a customer whose app cannot connect sees why
    // in its usage
    const key = keyId ?? refusal.keyId;
    if (this.#usage !== undefined && key !== undefined && label !== undefined)
      this.#usage.record(key, label, 1, 1, 0, { method: "websocket", code: refusal.code, ms: undefined });
    if (socket.writable) socket.end(upgradeRefusal(refusal, requestId));
    socket.destroy();
  }
}

/** The upgrade's span ends when the client's handshake is answered: 101 with its node, or the refusal. */
export function endUpgrade(
  trace: RequestTrace | undefined,
  status: number,
  code: ErrorCode | undefined,
  upstream: string | undefined,
): void {
  trace?.end({
    family: "jsonrpc",
    method: "websocket",
    methodClass: "stream",
    result: resultOf(code, status === 101 ? 200 : status),
    code,
    status,
    upstream,
    cache: undefined,
    tier: undefined,
    computeUnits: 0,
  });
}

/**
 * An upgrading socket's error ends it. A function of its own rather than a closure in handleUpgrade: the
 * socket keeps its listener for the connection's life, and a closure there kept the upgrade request, its
 * headers and the rest of handleUpgrade's variables alive with it.
 */
export function destroyOnError(this: Duplex): void {
  this.destroy();
}

/** What an upgrade's refusal is logged, counted and traced with. */
export interface UpgradeContext {
  readonly label: string | undefined;
  readonly requestId: string;
  readonly trace: RequestTrace | undefined;
  readonly keyId: string | undefined;
}
