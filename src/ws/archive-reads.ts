import { archiveFailed, noArchiveNode } from "../answers/archive.js";
import { rpcErrorJson } from "../errors/respond.js";
import type { RpcErrorCode } from "../errors/table.js";
import type { PassedCall } from "../jsonrpc/check.js";
import { unreached } from "../upstream/failure.js";
import type { UpstreamGroup } from "../upstream/group.js";
import type { CacheKeep } from "./cached-calls.js";
import { askOnce, type BridgedMount, openHttpBridge } from "./http-bridge.js";
import { textOf } from "./node-answers.js";
import type { PendingCalls } from "./pending-calls.js";

/**
 * Asks the label's archive nodes one call a connection's full node answered "no such state" (its text, with
 * its id), and calls back with the answer in that node's place: the archive node's, or the gateway's error
 * by the call's id when no archive node answers.
 */
export type ArchiveAsk = (callText: string, id: string, answered: (answer: string) => void) => void;

/** What asking the archive nodes needs: their group at the connection's mount, and the archive label. */
export interface ArchiveTarget extends BridgedMount {
  /** The archive label's group at the connection's mount; undefined when it has no upstream. */
  readonly group: UpstreamGroup | undefined;
  readonly label: string;
}

/**
 * A key that may reach archive nodes gets a connection's old reads from them as an HTTP caller's are
 * (docs/websocket.md, "Archive"): each over HTTP, one request, to the archive group's chosen node, as a
 * bridged connection's messages go (http-bridge.ts), with the answer or the error an HTTP caller would get.
 */
export function archiveAsk(target: ArchiveTarget): ArchiveAsk {
  const refusal = (code: RpcErrorCode, id: string, detail: Record<string, unknown> | undefined) =>
    rpcErrorJson(code, id, detail, target.requestId, target.errorForm);
  return (callText, id, answered) => {
    const { group } = target;
    if (group === undefined) {
      // as an HTTP caller's read is answered, in the same words, with the archive label (docs/errors.md)
      answered(refusal("NO_UPSTREAM", id, noArchiveNode(target.label).detail));
      return;
    }
    openHttpBridge(
      group,
      target.limits,
      {
        path: target.path,
        writes: target.writes,
        errorForm: target.errorForm,
        nodeErrors: target.nodeErrors,
      },
      () => true,
      (error, socket) => {
        // none of the archive nodes in rotation: as an HTTP caller's read is answered
        if (error !== undefined || socket === undefined) {
          const failed = archiveFailed(target.label, error ?? unreached());
          answered(refusal("NO_UPSTREAM", id, failed.detail));
          return;
        }
        askOnce(
          socket,
          callText,
          () => refusal("NO_UPSTREAM", id, archiveFailed(target.label, unreached()).detail),
          answered,
        );
      },
      target.headers,
    );
  };
}

/** An answer that is the gateway's own error (its `data.code`): an archive read that no archive node answered. */
const GATEWAY_ERROR = /"data":\{"code":"[A-Z_]+"/;

/** What asking the archive nodes for a node's message needs of its connection (connection.ts). */
export interface ArchiveAsking {
  readonly pending: PendingCalls;
  readonly closed: boolean;
  /** A single call's text, as the connection sends it. */
  build(call: PassedCall): string;
  guard<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void;
  /** The calls waiting on a miss get no answer from it: they ask a node themselves (cached-calls.ts). */
  drop(keep: CacheKeep): void;
  /** The node's message with the archive's answers in their places goes on as the node's would. */
  deliver(text: string): void;
}

/**
 * Whether a node's message holds plain reads beside its calls `missing`: the message waits for the archive
 * nodes' answers, and a write's or a subscription's answer held back meanwhile would be lost to a move, or
 * come after the subscription's first notification. Such a batch's old reads are ARCHIVE_REQUIRED.
 */
export function plainReadsBeside(
  pending: PendingCalls,
  envelopes: readonly ReadonlyMap<string, string>[],
  missing: readonly string[],
): boolean {
  for (const members of envelopes) {
    const id = members.get("id");
    if (id === undefined || missing.includes(id)) continue;
    const entry = pending.get(id);
    if (entry !== undefined && (entry.write || entry.kind !== "call")) return false;
  }
  return true;
}

/**
 * A node's message some of whose calls (`ids`) it answered "no such state", for a key that may reach
 * archive nodes: those calls are asked of the archive nodes, and the message goes on once each has its
 * answer there in the node's place (its other answers kept as the node gave them). An answer the archive
 * nodes gave is priced as theirs and kept by no cache; the gateway's own error costs nothing, as over HTTP.
 * Calls answered meanwhile otherwise (sent again after a move, and answered) keep that answer; so does one
 * the archive does not know either (`stillUnknown`: a transaction that never was, registry `unknownHistory`).
 */
export function askArchive(
  host: ArchiveAsking,
  ask: ArchiveAsk,
  envelopes: readonly ReadonlyMap<string, string>[],
  ids: readonly string[],
  batch: boolean,
  stillUnknown: (id: string, answer: string) => boolean = () => false,
): void {
  const answers = new Map<string, string>();
  const landed = (): void => {
    if (answers.size < ids.length || host.closed) return;
    const parts: string[] = [];
    for (const members of envelopes) {
      const id = members.get("id") ?? "";
      const entry = host.pending.get(id);
      if (entry === undefined) continue;
      const archived = answers.get(id);
      // the archive's answer of history the node may have dropped, when it does not know it either: the node's
      const answered = archived !== undefined && stillUnknown(id, archived) ? undefined : archived;
      if (answered !== undefined && GATEWAY_ERROR.test(answered))
        host.pending.failedHere(id, "ARCHIVE_REQUIRED");
      else if (answered !== undefined) {
        host.pending.archived(id);
        if (entry.keep !== undefined) host.drop(entry.keep);
        entry.keep = undefined;
      }
      parts.push(answered ?? textOf(members));
    }
    if (parts.length > 0) host.deliver(batch ? `[${parts.join(",")}]` : (parts[0] as string));
  };
  for (const id of ids) {
    const call = host.pending.get(id)?.call as PassedCall;
    ask(
      host.build(call),
      id,
      host.guard((answer: string) => {
        answers.set(id, answer);
        landed();
      }),
    );
  }
}
