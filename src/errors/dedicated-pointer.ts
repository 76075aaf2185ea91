import type { GatewayConfig } from "../config/types.js";

/** The detail every "not on your plan" error carries: how to get the capability. */
export function dedicatedPointer(support: GatewayConfig["support"]): Record<string, string> {
  return {
    howToGet: "Order a dedicated node, or ask support to enable it",
    dedicatedNode: support.dedicatedNodeUrl,
    support: support.email,
  };
}
