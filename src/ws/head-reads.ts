import type { RawData } from "ws";
import type { Limits } from "../config/types.js";
import { type ErrorForm, rpcErrorJson } from "../errors/respond.js";
import type { NodeErrors } from "../registry/types.js";
import type { UpstreamGroup } from "../upstream/group.js";
import { HttpBridge } from "./http-bridge.js";
import { toText } from "./message-intake.js";
import type { NodeSocket } from "./node-socket.js";

/**
 * Asks a node of the connection's label that has reached `atLeast` one read (its text, with its id), and
 * calls back with its answer; false, and nothing asked, when no node in rotation has reached it.
 */
export type HeadAsk = (
  callText: string,
  id: string,
  atLeast: number,
  answered: (answer: string) => void,
) => boolean;

/** What a call a connection asks over HTTP, beside its node, takes of its mount and of the deployment. */
export interface BridgedMount {
  readonly path: string;
  readonly writes: ReadonlySet<string>;
  readonly errorForm: ErrorForm;
  readonly nodeErrors: NodeErrors | undefined;
  readonly limits: Limits;
  /** The upgrade's request id and trace headers, as the connection's node gets them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly requestId: string | undefined;
}

/** What asking another node of the label needs: its group and its name besides. */
export interface HeadTarget extends BridgedMount {
  readonly group: UpstreamGroup;
  readonly label: string;
}

/**
 * Sends one call on a bridge to a node and calls back once with its answer, or with `unanswered()` when
 * the bridge "closes" (1006: its node could not be reached); the bridge is closed after.
 */
export function askOnce(
  bridge: NodeSocket,
  callText: string,
  unanswered: () => string,
  answered: (answer: string) => void,
): void {
  let done = false;
  const finish = (answer: string): void => {
    if (done) return;
    done = true;
    bridge.close();
    answered(answer);
  };
  bridge.on("message", (data: RawData) => finish(toText(data)));
  bridge.on("close", () => finish(unanswered()));
  bridge.send(callText);
}

/**
 * A connection keeps its node, whose head may be a block behind the one the label served to an HTTP caller
 * or another instance: its reads at the head, or of a block its node has not reached, go over HTTP to a
 * node that has (group.ts `choose` with the head they need), one request each, as a bridged connection's
 * messages go (http-bridge.ts), and their answers take the node's place by id. A caller reading over HTTP
 * and over a socket saw the head go back (docs/upstreams.md, "Answers across nodes").
 */
export function headAsk(target: HeadTarget): HeadAsk {
  return (callText, id, atLeast, answered) => {
    const upstream = target.group.choose(false, atLeast)[0];
    if (upstream === undefined) return false;
    const bridge = new HttpBridge(
      upstream,
      target.path,
      target.headers,
      target.limits.upstream,
      target.writes,
      target.errorForm,
      undefined,
      target.nodeErrors,
    );
    askOnce(
      bridge,
      callText,
      () =>
        rpcErrorJson(
          "NO_UPSTREAM",
          id,
          { reason: `no node of ${target.label} could be reached` },
          target.requestId,
          target.errorForm,
        ),
      answered,
    );
    return true;
  };
}
