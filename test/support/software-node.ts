import type { Endpoint, Mount } from "../../src/registry/types.js";
import { CHAIN_ANSWERS, FINALITY_ANSWERS } from "./chain-answers.js";
import type { Reply, Responder, SeenRequest } from "./loopback-node.js";
import { admits, type Guard } from "./node-guards.js";
import {
  type Answer,
  type IncomingCall,
  incomingCalls,
  JSON_RPC_SOFTWARE,
  jsonRpcReply,
  NodeRejection,
  type NodeState,
  type Outcome,
  REST_SOFTWARE,
} from "./node-software.js";
import { HEAD_ANSWERS, type TypicalAnswer } from "./typical-calls.js";

/** A healthy node of an endpoint's chain at `height`: the chain id or name the registry gives the label. */
export function nodeState(endpoint: Endpoint, height: number): NodeState {
  return { height, chainId: endpoint.chainId, chain: endpoint.chain, mode: "serving" };
}

/** What a loopback node serves beyond its software's head and chain calls. */
export interface NodeExtras {
  /** Answers to more calls (an SDK's), keyed like HEAD_ANSWERS; they win over the head and chain answers. */
  readonly answers?: Readonly<Record<string, TypicalAnswer>>;
  /** Whether it demands its software's credential (node-guards.ts), as a real node does. */
  readonly guarded?: boolean;
}

/**
 * A loopback node of an endpoint, answering as each of its mounts' node software does (node-software.ts):
 * the head and chain calls of every interface it serves, at each mount under each of `basePaths`, in the
 * software's own envelope, status codes and quirks; a method it does not know with the software's own
 * error; any other path with its 404. It reads `state` at every request, so a test moves the chain, or
 * makes the node fail, while it runs. `extras` adds calls (an SDK's, sdk-nodes.ts) and turns the
 * software's credential on; the suites that need no credential leave it off.
 */
export function softwareNode(
  endpoint: Endpoint,
  state: NodeState | (() => NodeState),
  basePaths: readonly string[] = [""],
  extras: NodeExtras = {},
): Responder {
  const current = typeof state === "function" ? state : () => state;
  // Longest first, so "" does not take /base/path's calls; mounts come longest first from the registry.
  const bases = [...basePaths].sort((a, b) => b.length - a.length);
  const mounts = endpoint.mounts;
  const node: Node = { answers: { ...ANSWERS, ...extras.answers }, guarded: extras.guarded === true };
  return (request) => {
    const path = request.url.split("?")[0] ?? "";
    for (const basePath of bases) {
      for (const mount of mounts) {
        const root = `${basePath}${mount.path === "/" ? "" : mount.path}`;
        if (path !== (root === "" ? "/" : root) && !path.startsWith(`${root}/`)) continue;
        const rest = path.slice(root.length) || "/";
        return answerAt(mount, rest, request, current(), node);
      }
    }
    return { status: 404, body: "" };
  };
}

interface Node {
  readonly answers: Readonly<Record<string, TypicalAnswer>>;
  readonly guarded: boolean;
}

function answerAt(mount: Mount, path: string, request: SeenRequest, state: NodeState, node: Node): Reply {
  const ids = mount.policy.id.split("+");
  const refused = (guard: Guard | undefined) =>
    node.guarded && guard !== undefined && !admits(guard, request) ? guard.refusal : undefined;
  if (mount.policy.jsonrpc !== undefined && request.method === "POST" && path === "/") {
    const software = JSON_RPC_SOFTWARE[ids[0] as string];
    if (software === undefined) throw new Error(`no node software for interface ${ids[0]}`);
    const refusal = refused(software.guard);
    if (refusal !== undefined) return refusal;
    const parsed = incomingCalls(request);
    if (parsed === undefined)
      return software.parseError === undefined
        ? { status: 400, body: "" }
        : jsonRpcReply(software, false, [software.parseError]);
    if (parsed.batch && software.unbatched !== undefined)
      return jsonRpcReply(software, false, [software.unbatched]);
    // a software that echoes the id's own text (node-software.ts echoesRawId) writes it back as it came
    const withRawId = (call: IncomingCall, answer: Answer): Answer =>
      software.echoesRawId === true && call.rawId !== undefined && answer.json.id === call.id
        ? { ...answer, rawId: call.rawId }
        : answer;
    const answers = parsed.calls.flatMap((call) => {
      const result = outcome(call, state, node.answers);
      if ("error" in result && result.error === "missing-state" && software.missingState !== undefined)
        return withRawId(call, software.missingState(call));
      const answer = software.answer(call, result);
      return answer === undefined ? [] : withRawId(call, answer);
    });
    return jsonRpcReply(software, parsed.batch, answers, parsed.calls.length);
  }
  const rest = ids.map((id) => REST_SOFTWARE[id]).find((software) => software !== undefined);
  if (rest === undefined) return { status: 404, body: "" };
  const key = `${rest.getAsPost === true && request.method === "GET" ? "POST" : request.method} ${path}`;
  const answer = node.answers[key];
  // A guard stands before the routes it keeps (algod's is on each route), so an unknown path is a 404.
  const refusal = answer === undefined ? undefined : refused(rest.guard);
  if (refusal !== undefined) return refusal;
  // a path that is no route of the software's: its server's own answer, before any handler runs
  if (answer === undefined && rest.unknownRoute !== undefined) return rest.unknownRoute(request);
  if (state.mode === "failing") return rest.failure;
  if (answer === undefined) return rest.notFound;
  // java-tron's doGet reads the same fields from the query (GetBlockByNumServlet: getParameter("num"))
  const body =
    rest.getAsPost === true && request.method === "GET"
      ? queryAsBody(request.url)
      : jsonOrNothing(request.body);
  if (state.mode === "no-head" && HEAD_ANSWERS[key] !== undefined) return rest.ok(answer.noHead ?? {});
  try {
    return rest.ok(answer.result(state, body));
  } catch (error) {
    if (!(error instanceof NodeRejection)) throw error;
    return rest.rejected?.(error) ?? { status: 500, body: error.message };
  }
}

/** A GET's query as the fields a java-tron servlet reads from it, numbers as the numbers it parses. */
function queryAsBody(url: string): Record<string, unknown> {
  const query = new URLSearchParams(url.split("?")[1] ?? "");
  return Object.fromEntries(
    [...query].map(([name, value]) => [name, /^\d+$/.test(value) ? Number(value) : value]),
  );
}

/** A REST body as a route reads it; one that is not JSON (a fuzzed one) as none. */
function jsonOrNothing(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  ...CHAIN_ANSWERS,
  ...FINALITY_ANSWERS,
  ...HEAD_ANSWERS,
};

function outcome(
  call: IncomingCall,
  state: NodeState,
  answers: Readonly<Record<string, TypicalAnswer>>,
): Outcome {
  const answer = Object.hasOwn(answers, call.method) ? answers[call.method] : undefined;
  if (answer === undefined) return { error: "unknown-method", method: call.method };
  if (state.mode === "failing") return { error: "failure", method: call.method };
  if (state.mode === "no-head" && HEAD_ANSWERS[call.method] !== undefined)
    return { result: answer.noHead ?? null };
  if (answer.missing?.(state, call.params)) return { error: "missing-state", method: call.method };
  try {
    return { result: answer.result(state, call.params) };
  } catch (error) {
    if (!(error instanceof NodeRejection)) throw error;
    return {
      error: "rejected",
      method: call.method,
      code: error.code,
      message: error.message,
      ...(error.body === undefined ? {} : { body: error.body }),
    };
  }
}
