import type { Server } from "node:http";
import type { GatewayConfig } from "../config/types.js";
import { LISTENERS, listen } from "../lifecycle.js";

/** The operator API on its listener, or undefined without one; a clash names the listener. */
export async function listenOperator(
  operator: Server | undefined,
  config: GatewayConfig,
): Promise<number | undefined> {
  if (operator === undefined || config.operator === undefined) return undefined;
  const { host, port } = config.operator.listen;
  return listen(operator, port, host, LISTENERS.operator);
}

export function closeServer(server: Server | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (server === undefined || !server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
