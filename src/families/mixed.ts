import type { Family, FamilySettings } from "./family.js";
import { routeJsonRpc } from "./jsonrpc.js";
import { routeRest } from "./rest.js";

/**
 * The mixed family: one mount with a JSON-RPC dialect at its root and HTTP routes beside it (a node's
 * GET /status, a bridge's GET /health; registry/README.md). A request to the root is a JSON-RPC message; any other path is
 * one of the routes. Its errors are JSON-RPC error objects, as the clients of such a mount are
 * JSON-RPC SDKs.
 */
export function mixedFamily(settings: FamilySettings): Family {
  return {
    style: "jsonrpc",
    route: (req, mounted) =>
      mounted.segments.length === 0
        ? routeJsonRpc(req, mounted, settings)
        : routeRest(req, mounted, settings),
  };
}
