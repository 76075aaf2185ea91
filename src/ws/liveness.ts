import type { WebSocket } from "ws";
import type { Limits } from "../config/types.js";

/**
 * Whether a connection's client is still there (docs/websocket.md, "Bounds"): pinged every
 * `pingIntervalMs`, terminated when a ping is still unanswered at the next, and told `idle` when no message
 * came for `idleTimeoutMs`. `beat` runs at each ping too (the connection pings its node's socket). Each
 * timer's callback runs through the connection's error boundary (`guard`).
 */
export class ClientLiveness {
  readonly #client: WebSocket;
  readonly #ping: NodeJS.Timeout;
  readonly #idle: NodeJS.Timeout;
  #alive = true;

  constructor(
    client: WebSocket,
    limits: Limits["ws"],
    guard: (listener: () => void) => () => void,
    idle: () => void,
    beat: () => void,
  ) {
    this.#client = client;
    client.on("pong", () => {
      this.#alive = true;
    });
    this.#ping = setInterval(
      guard(() => {
        this.#heartbeat();
        beat();
      }),
      limits.pingIntervalMs,
    );
    this.#idle = setTimeout(guard(idle), limits.idleTimeoutMs);
  }

  /** A message came: the idle timeout starts again. */
  touch(): void {
    this.#idle.refresh();
  }

  stop(): void {
    clearInterval(this.#ping);
    clearTimeout(this.#idle);
  }

  #heartbeat(): void {
    if (!this.#alive) {
      this.#client.terminate();
      return;
    }
    this.#alive = false;
    this.#client.ping();
  }
}
