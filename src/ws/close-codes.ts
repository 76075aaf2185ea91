// Close codes the relay sends to clients (docs/websocket.md lists them with their reasons). 1007 (invalid
// UTF-8) and 1009 (message too big) come from ws itself.
export const CLOSE = {
  /** Idle timeout, or the client's own normal close passed on. */
  NORMAL: 1000,
  /** The gateway is shutting down. */
  GOING_AWAY: 1001,
  /**
   * A policy ended the connection: the client does not read (its send buffer passed the bound), or its key
   * was withdrawn or its settings changed.
   */
  POLICY: 1008,
  /** A gateway fault on this connection. */
  INTERNAL: 1011,
  /** The upstream node closed or failed: the connection has nothing behind it any more. */
  BAD_GATEWAY: 1014,
  /** The key's compute-unit quota is spent (QUOTA_EXCEEDED, docs/plans.md); 4000–4999 is for applications. */
  QUOTA_EXCEEDED: 4402,
} as const;
