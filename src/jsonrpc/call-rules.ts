import type { GatewayConfig } from "../config/types.js";
import type { Mounted } from "../pipeline/stages.js";
import type { JsonRpcPolicy } from "../registry/types.js";
import type { CallRules } from "./check.js";
import { membersRead } from "./member-case.js";

/**
 * The rules a caller's calls on a mount are checked by (check.ts), made in one place for an HTTP request
 * (families/jsonrpc.ts) and for every message on a WebSocket (ws/connection.ts): what one transport checks,
 * the other does too. `callRefusal` judges a range call too wide to go as one, and a use of another caller's filter.
 */
export function callRulesOf(
  mounted: Mounted,
  transport: CallRules["transport"],
  support: GatewayConfig["support"],
  callRefusal: CallRules["callRefusal"],
): CallRules {
  const { admitted, mount } = mounted;
  return {
    policy: mount.policy.jsonrpc as JsonRpcPolicy,
    plan: admitted.plan,
    support,
    transport,
    // the key's settings hold for every call; a change of them ends a WebSocket (keys/key-cache.ts)
    keyRules: admitted.principal?.rules,
    contracts: mount.policy.contracts,
    stateOverrides: mount.policy.stateOverrides,
    stateDumps: mount.policy.stateDumps,
    membersRead: membersRead(mount.policy),
    // the request's id (a WebSocket's: its upgrade's), in every refusal's data
    requestId: admitted.requestId,
    callRefusal,
  };
}
