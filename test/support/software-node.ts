import type { Endpoint, Mount } from "../../src/registry/types.js";
import { CHAIN_ANSWERS } from "./chain-answers.js";
import type { Reply, Responder, SeenRequest } from "./loopback-node.js";
import {
  type IncomingCall,
  incomingCalls,
  JSON_RPC_SOFTWARE,
  jsonRpcReply,
  type NodeState,
  type Outcome,
  REST_SOFTWARE,
} from "./node-software.js";
import { HEAD_ANSWERS, type TypicalAnswer } from "./typical-calls.js";

/** A healthy node of an endpoint's chain at `height`: the chain id or name the registry gives the label. */
export function nodeState(endpoint: Endpoint, height: number): NodeState {
  return { height, chainId: endpoint.chainId, chain: endpoint.chain, mode: "serving" };
}

/**
 * A loopback node of an endpoint, answering as each of its mounts' node software does (node-software.ts):
 * the head and chain calls of every interface it serves, at each mount under each of `basePaths`, in the
 * software's own envelope, status codes and quirks; a method it does not know with the software's own
 * error; any other path with its 404. It reads `state` at every request, so a test moves the chain, or
 * makes the node fail, while it runs.
 */
export function softwareNode(
  endpoint: Endpoint,
  state: NodeState | (() => NodeState),
  basePaths: readonly string[] = [""],
): Responder {
  const current = typeof state === "function" ? state : () => state;
  // Longest first, so "" does not take /base/path's calls; mounts come longest first from the registry.
  const bases = [...basePaths].sort((a, b) => b.length - a.length);
  const mounts = endpoint.mounts;
  return (request) => {
    const path = request.url.split("?")[0] ?? "";
    for (const basePath of bases) {
      for (const mount of mounts) {
        const root = `${basePath}${mount.path === "/" ? "" : mount.path}`;
        if (path !== (root === "" ? "/" : root) && !path.startsWith(`${root}/`)) continue;
        const rest = path.slice(root.length) || "/";
        return answerAt(mount, rest, request, current());
      }
    }
    return { status: 404, body: "" };
  };
}

function answerAt(mount: Mount, path: string, request: SeenRequest, state: NodeState): Reply {
  const ids = mount.policy.id.split("+");
  const rest = ids.map((id) => REST_SOFTWARE[id]).find((software) => software !== undefined);
  if (mount.policy.jsonrpc !== undefined && request.method === "POST" && path === "/") {
    const software = JSON_RPC_SOFTWARE[ids[0] as string];
    if (software === undefined) throw new Error(`no node software for interface ${ids[0]}`);
    const parsed = incomingCalls(request);
    if (parsed === undefined) return { status: 400, body: "" };
    const answers = parsed.calls.flatMap((call) => software.answer(call, outcome(call, state)) ?? []);
    return jsonRpcReply(software, parsed.batch, answers);
  }
  if (rest === undefined) return { status: 404, body: "" };
  if (state.mode === "failing") return rest.failure;
  const answer = ANSWERS[`${request.method} ${path}`];
  if (answer === undefined) return rest.notFound;
  const body = request.body === "" ? undefined : (JSON.parse(request.body) as unknown);
  if (state.mode === "no-head" && HEAD_ANSWERS[`${request.method} ${path}`] !== undefined)
    return rest.ok(answer.noHead ?? {});
  return rest.ok(answer.result(state, body));
}

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = { ...CHAIN_ANSWERS, ...HEAD_ANSWERS };

function outcome(call: IncomingCall, state: NodeState): Outcome {
  const answer = ANSWERS[call.method];
  if (answer === undefined) return { error: "unknown-method", method: call.method };
  if (state.mode === "failing") return { error: "failure", method: call.method };
  if (state.mode === "no-head" && HEAD_ANSWERS[call.method] !== undefined)
    return { result: answer.noHead ?? null };
  return { result: answer.result(state, call.params) };
}
