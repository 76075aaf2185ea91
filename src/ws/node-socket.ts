import type { RawData } from "ws";
import type { ErrorCode } from "../errors/table.js";

/**
 * What a connection uses of its node side (connection.ts, move.ts): a `ws` WebSocket to the node, or,
 * where the node software has no WebSocket server, an HttpBridge (http-bridge.ts) that sends each message
 * over HTTP.
 */
export interface NodeSocket {
  readonly readyState: number;
  readonly OPEN: number;
  readonly CONNECTING: number;
  /** Bytes sent and not yet taken by the node: a node that stops reading lets them grow. */
  readonly bufferedAmount: number;
  send(text: string): void;
  /** A WebSocket's ping to the node, answered with a `pong` event; a bridge sends none. */
  ping?(): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  /**
   * `failedHere`, from a bridge: the calls, by id, it answered with the gateway's own error (a node that
   * answered nothing usable, or past the cap), which cost nothing, as over HTTP.
   */
  on(
    event: "message",
    listener: (data: RawData, isBinary: boolean, failedHere?: ReadonlyMap<string, ErrorCode>) => void,
  ): this;
  on(event: "close", listener: (code: number) => void): this;
  /**
   * From a bridge: the node refused the connection for message `text`, which so reached no node and may go
   * to another whole, its writes too (move.ts). Told before the node's failure moves the connection.
   */
  on(event: "undelivered", listener: (text: string) => void): this;
  on(event: "pong", listener: () => void): this;
  on(event: "error", listener: (error: Error) => void): this;
}
