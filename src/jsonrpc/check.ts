import type { GatewayConfig } from "../config/types.js";
import { dedicatedPointer } from "../context.js";
import { rpcErrorJson } from "../errors/respond.js";
import type { ErrorCode } from "../errors/table.js";
import type { Plan } from "../keys/types.js";
import type { JsonRpcPolicy, MethodAccess } from "../registry/types.js";
import type { RawCall } from "./scan.js";

export type Checked =
  | {
      readonly ok: true;
      readonly json: string;
      readonly method: string;
      readonly access: MethodAccess;
      readonly id: string | undefined;
    }
  | { readonly ok: false; readonly json: string; readonly code: ErrorCode };

export interface CallRules {
  readonly policy: JsonRpcPolicy;
  readonly plan: Plan | undefined;
  readonly support: GatewayConfig["support"];
  /** Subscriptions and stateful calls only make sense on a WebSocket. */
  readonly transport: "http" | "websocket";
}

/** Applies the envelope rule and the method allow-list to one call, and re-serialises it if it passed. */
export function checkCall(rules: CallRules, call: RawCall): Checked {
  const { policy } = rules;
  if (!policy.validate(call.value)) {
    const first = policy.validate.errors?.[0];
    const detail = { reason: `${first?.instancePath || "request"} ${first?.message ?? "is invalid"}`.trim() };
    return refuse("INVALID_REQUEST", idOf(call), detail);
  }
  const id = idOf(call);
  const method = (call.value as { method: string }).method;
  const access = policy.methods.get(method);
  if (access === undefined) return refuse("METHOD_NOT_FOUND", id, { method });
  if (rules.transport === "http" && access !== "shared" && access !== "dedicated") {
    return refuse("WEBSOCKET_ONLY", id, { method });
  }
  if (access === "dedicated" && rules.plan !== "dedicated") {
    return refuse("METHOD_NOT_ON_PLAN", id, { method, ...dedicatedPointer(rules.support) });
  }
  return { ok: true, json: reserialise(call, method), method, access, id: call.members.get("id") };
}

/**
 * What goes upstream is what was validated: the known members only, the method as parsed, and the id
 * and params as the caller's own source text (so an id keeps all its digits). Extra members are dropped.
 */
function reserialise(call: RawCall, method: string): string {
  const { members } = call;
  const jsonrpc = members.get("jsonrpc");
  const id = members.get("id");
  const params = members.get("params");
  let out = "{";
  if (jsonrpc !== undefined) out += `"jsonrpc":${jsonrpc},`;
  if (id !== undefined) out += `"id":${id},`;
  out += `"method":${JSON.stringify(method)}`;
  if (params !== undefined) out += `,"params":${params}`;
  return `${out}}`;
}

/** The id to answer with: the caller's own token when it is a valid id, else null (JSON-RPC 2.0 §5). */
export function idOf(call: RawCall): string {
  const raw = call.members.get("id");
  if (raw === undefined) return "null";
  const id = (call.value as { id?: unknown }).id;
  const valid =
    id === null ||
    typeof id === "number" ||
    typeof id === "string" ||
    (typeof id === "object" && !Array.isArray(id));
  return valid ? raw : "null";
}

export function refuse(code: ErrorCode, id: string, detail: Record<string, unknown>): Checked {
  return { ok: false, code, json: rpcErrorJson(code, id, detail) };
}
