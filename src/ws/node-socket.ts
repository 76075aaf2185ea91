import type { RawData } from "ws";

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
  close(code?: number, reason?: string): void;
  terminate(): void;
  on(event: "message", listener: (data: RawData, isBinary: boolean) => void): this;
  on(event: "close", listener: (code: number) => void): this;
  on(event: "error", listener: (error: Error) => void): this;
}
