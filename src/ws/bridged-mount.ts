import type { Limits } from "../config/types.js";
import { errorFormOf } from "../errors/respond.js";
import type { Mounted, Stages } from "../pipeline/stages.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { type ArchiveAsk, archiveAsk } from "./archive-reads.js";
import { type HeadAsk, headAsk } from "./head-reads.js";
import type { BridgedMount } from "./http-bridge.js";
import { nodeHandshakeHeaders } from "./open-node-socket.js";

/** A connection's way to a node of its label at the head, where its dialect knows reads at the head and the label has several nodes. */
export function headAskOf(mounted: Mounted, group: UpstreamGroup, limits: Limits): HeadAsk | undefined {
  const bridged = bridgedMount(mounted, limits);
  if (bridged === undefined || group.members.length < 2) return undefined;
  return headAsk({ ...bridged, group, label: mounted.admitted.endpoint.label });
}

/** A connection's way to its label's archive nodes, where its key may reach them and its dialect has old reads. */
export function archiveAskOf(mounted: Mounted, stages: Stages, limits: Limits): ArchiveAsk | undefined {
  const bridged = bridgedMount(mounted, limits);
  const archive = stages.archiveGroup(mounted);
  if (
    archive === undefined ||
    bridged === undefined ||
    mounted.mount.policy.jsonrpc?.reads?.archive === undefined
  )
    return undefined;
  return archiveAsk({ ...archive, ...bridged });
}

/** What a call a connection asks over HTTP, beside its node, takes of its mount (http-bridge.ts). */
function bridgedMount(mounted: Mounted, limits: Limits): BridgedMount | undefined {
  const jsonrpc = mounted.mount.policy.jsonrpc;
  if (jsonrpc?.reads === undefined) return undefined;
  return {
    path: mounted.mount.path,
    writes: jsonrpc.writes,
    errorForm: errorFormOf(jsonrpc, false),
    nodeErrors: mounted.mount.policy.nodeErrors,
    limits,
    headers: nodeHandshakeHeaders(mounted.admitted),
    requestId: mounted.admitted.requestId,
  };
}
