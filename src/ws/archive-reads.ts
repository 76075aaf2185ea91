import type { Limits } from "../config/types.js";
import { type ErrorForm, rpcErrorJson } from "../errors/respond.js";
import type { RpcErrorCode } from "../errors/table.js";
import type { NodeErrors } from "../registry/types.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { openHttpBridge } from "./http-bridge.js";
import { toText } from "./message-intake.js";

/**
 * Asks the label's archive nodes one call a connection's full node answered "no such state" (its text, with
 * its id), and calls back with the answer in that node's place: the archive node's, or the gateway's error
 * by the call's id when no archive node answers.
 */
export type ArchiveAsk = (callText: string, id: string, answered: (answer: string) => void) => void;

/** What asking the archive nodes needs of the connection's mount and of the deployment. */
export interface ArchiveTarget {
  /** The archive label's group at the connection's mount; undefined when it has no upstream. */
  readonly group: UpstreamGroup | undefined;
  readonly label: string;
  readonly path: string;
  readonly writes: ReadonlySet<string>;
  readonly errorForm: ErrorForm;
  readonly nodeErrors: NodeErrors | undefined;
  readonly limits: Limits;
  /** The upgrade's request id and trace headers, as the connection's node gets them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly requestId: string | undefined;
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
      answered(
        refusal("NO_UPSTREAM", id, {
          reason: `this read needs an archive node, and ${target.label} has no upstream`,
        }),
      );
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
          answered(refusal("NO_UPSTREAM", id, { ...error?.detail }));
          return;
        }
        let done = false;
        const finish = (answer: string): void => {
          if (done) return;
          done = true;
          socket.close();
          answered(answer);
        };
        socket.on("message", (data) => finish(toText(data)));
        // a bridge "closes" (1006) when its node cannot be reached
        socket.on("close", () =>
          finish(refusal("NO_UPSTREAM", id, { reason: `no node of ${target.label} could be reached` })),
        );
        socket.send(callText);
      },
      target.headers,
    );
  };
}
