import type { IncomingMessage } from "node:http";
import type { Dispatcher } from "undici";
import type { ReadNeed } from "../answers/read-need.js";
import type { CacheRead } from "../cache/cache-read.js";
import type { Limits } from "../config/types.js";
import type { ErrorStyle } from "../errors/respond.js";
import type { RpcErrorCode } from "../errors/table.js";
import type { CallRefusal, PassedCall } from "../jsonrpc/check.js";
import type { BatchLayout } from "../jsonrpc/merge.js";
import type { Mounted } from "../pipeline/stages.js";
import type { BatchPart } from "../plans/compute-units.js";

/**
 * One interface family (JSON-RPC, REST, or both on one mount), as `familyTable` in table.ts looks it up
 * by the mount's registry family. It is stage 4 of the pipeline (src/pipeline/stages.ts): the family parses
 * the message and authorizes it against the registry, synchronously, returning a value or throwing a
 * GatewayError.
 */
export interface Family {
  /**
   * How a refusal on this family's mounts is written before and after routing: a JSON-RPC error object
   * wherever the mount speaks a JSON-RPC dialect (an SDK reads those, even from a mixed mount's HTTP
   * route), a REST error body elsewhere.
   */
  readonly style: ErrorStyle;
  /**
   * Stage 4 on an HTTP request, from its method, path and headers: what can be refused before any body
   * is read (an unknown route, a method the path does not take). The route it returns finishes stage 4
   * once the body, if any, is in.
   */
  route(req: IncomingMessage, mounted: Mounted): RoutedRequest;
}

/** An HTTP request its family has routed: whether a body is read, and how stage 4 ends. */
export interface RoutedRequest {
  /** The family the request is served as: a mixed mount's root is JSON-RPC, its routes REST. */
  readonly family: "jsonrpc" | "rest";
  /** Whether the transport reads a body before `authorize`. */
  readonly readsBody: boolean;
  /** The rest of stage 4: the body parsed and checked; `body` is empty when none was read. */
  authorize(body: Buffer): Authorized;
}

/** Stage 4's value: what the caller is charged, and what goes upstream or is answered at once. */
export interface Authorized {
  /** Tokens the rate-limit stage takes: one per call (a batch of n costs n). */
  readonly cost: number;
  /** What the calls that go upstream cost in compute units (src/plans/compute-units.ts). */
  readonly computeUnits: number;
  /** The id a refusal from a later stage answers with: a single call's own id token, else "null". */
  readonly replyId: string;
  /** Answered without any upstream, because every call in it was refused (the first refusal's code). */
  readonly answer:
    | { readonly status: number; readonly body: string; readonly code: RpcErrorCode }
    | undefined;
  /** What goes upstream when something does. */
  readonly outgoing: Outgoing | undefined;
  /** Refusals of a partial batch, merged into the node's answer to the calls that passed. */
  readonly refusals: BatchLayout | undefined;
  /** For the access log and the metrics: a single call's method, or the route by its shape. */
  readonly method: string | undefined;
  /** A batch's methods for the access log, each with its count, bounded (jsonrpc/batch-methods.ts). */
  readonly methods?: string | undefined;
  readonly route: string | undefined;
  readonly batch: number | undefined;
  readonly refused: number | undefined;
  /**
   * A JSON-RPC batch's calls that passed, by their id tokens (notifications have none): an error of the
   * whole batch from a later stage (a rate, a quota, no node) answers each of them with it.
   */
  readonly batchIds?: readonly string[] | undefined;
  /** Whether each of `batchIds`' calls is framed as JSON-RPC 1.0 on a dialect that answers it so. */
  readonly batchLegacy?: readonly boolean[] | undefined;
  /** One call framed as JSON-RPC 1.0 on a dialect that answers it so: the gateway's errors take 1.0's shape. */
  readonly legacy?: boolean | undefined;
  /** A batch's calls that passed, by method: the key's usage counts each method apart. */
  readonly batchParts?: readonly BatchPart[] | undefined;
  /** The codes of a batch's calls refused on their own, one each: the key's usage counts errors by code. */
  readonly refusedCodes?: readonly string[] | undefined;
  /** A JSON-RPC batch's calls refused on their own, as their answers: they keep them whatever comes after. */
  readonly batchRefusals?: BatchLayout | undefined;
}

/** The upstream request a family built: the caller's path below the key and only allow-listed headers. */
export interface Outgoing {
  readonly method: Dispatcher.HttpMethod;
  /**
   * Built from an allow-list by the family, never the client's Host, cookies or credentials; names and
   * values in turn, undici's flat form: the node's request is built without an object per call.
   */
  readonly headers: readonly string[];
  readonly body: string | Buffer | undefined;
  /** A long-lived stream (a REST monitor route): no body timeout or size cap, chunks flushed at once. */
  readonly stream: boolean;
  /** A long poll (registry `longPolls`): how long its node may hold it before it answers anyway. */
  readonly heldMs?: number;
  /** It submits something (the registry's `writes`): the upstream policy never sends it twice. */
  readonly write: boolean;
  /** A JSON-RPC batch's writes, by their ids: whether its node took them is read from their answers alone. */
  readonly writeIds?: readonly string[] | undefined;
  /** What its reads need of the node that answers them (src/answers/read-need.ts), when any reads by block. */
  readonly reads: ReadNeed | undefined;
  /** A JSON-RPC message of one call: the call, which the answer cache may answer (src/cache/). */
  readonly single?: PassedCall | undefined;
  /** A REST GET the answer cache may answer, as the family read its route (src/cache/cache-read.ts). */
  readonly restCache?: CacheRead | undefined;
  /** A JSON-RPC batch's calls that passed, which the cache may answer one by one (refusals join them). */
  readonly batch?: readonly PassedCall[] | undefined;
  /** The path the node gets when it is not the caller's (a JSON-RPC call at a `jsonRpcPaths` path). */
  readonly path?: string | undefined;
  /** The query the node gets when it is not the caller's: none for a REST-shaped call, whose params it was. */
  readonly query?: string | undefined;
}

/** What the families read from the deployment config. */
export interface FamilySettings {
  readonly limits: Pick<Limits, "maxBatch" | "maxJsonDepth">;
  readonly support: { readonly email: string; readonly dedicatedNodeUrl: string };
  /** A batch's call refused alone: a range too wide to go unsplit, another's filter (jsonrpc/check.ts CallRules). */
  readonly callRefusal?: (mounted: Mounted, call: PassedCall) => CallRefusal | undefined;
}
