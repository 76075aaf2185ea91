import type { Limits } from "../config/types.js";
import { errorFormOf } from "../errors/respond.js";
import type { GatewayError } from "../errors/table.js";
import type { HeldCalls } from "../limits/held-calls.js";
import type { Admitted } from "../pipeline/admitted.js";
import type { Mounted } from "../pipeline/stages.js";
import { TRACE_PARENT_HEADER } from "../tracing/trace-parent.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { openWebSocket } from "../upstream/policy.js";
import type { Upstream } from "../upstream/upstreams.js";
import { openHttpBridge } from "./http-bridge.js";
import type { NodeSocket } from "./node-socket.js";

/**
 * The node side of a connection: a socket on the node, or where the node software has no WebSocket
 * server (registry `webSocketOverHttp`), a bridge that sends each message to it over HTTP.
 */
export function openNodeSocket(
  group: UpstreamGroup,
  mounted: Mounted,
  limits: Limits,
  wanted: () => boolean,
  callback: (error: GatewayError | undefined, socket?: NodeSocket, upstream?: Upstream) => void,
  headers: Readonly<Record<string, string>>,
  held: HeldCalls | undefined,
  besides?: Upstream,
): void {
  const jsonrpc = mounted.mount.policy.jsonrpc;
  const longPolls = mounted.mount.policy.longPolls;
  if (jsonrpc?.webSocketOverHttp === true)
    openHttpBridge(
      group,
      limits,
      {
        path: mounted.mount.path,
        writes: jsonrpc.writes,
        errorForm: errorFormOf(jsonrpc, false),
        nodeErrors: mounted.mount.policy.nodeErrors,
        longPolls:
          longPolls?.methods === undefined
            ? undefined
            : {
                methods: longPolls.methods,
                heldMs: longPolls.heldMs,
                slots: held === undefined ? undefined : { calls: held, caller: mounted.admitted.clientId },
              },
      },
      wanted,
      callback,
      headers,
      besides,
    );
  else openWebSocket(group, limits, wanted, callback, headers, besides);
}

/** The node's handshake carries the upgrade's id and trace, as an HTTP request's node request does. */
export function nodeHandshakeHeaders(admitted: Admitted): Readonly<Record<string, string>> {
  const { trace } = admitted;
  const headers: Record<string, string> = {};
  const flat = admitted.nodeHeaders([]);
  for (let i = 0; i < flat.length; i += 2) headers[flat[i] as string] = flat[i + 1] as string;
  if (typeof trace === "object") headers[TRACE_PARENT_HEADER] = trace.traceParent();
  return headers;
}
