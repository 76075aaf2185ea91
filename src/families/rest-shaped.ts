import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors/table.js";
import { requestMediaType } from "../http/body.js";
import type { Mounted } from "../pipeline/stages.js";
import type { JsonRpcPolicy } from "../registry/types.js";
import type { Authorized, RoutedRequest } from "./family.js";

/** What a JSON-RPC request's authorization needs of a REST-shaped call: the call, as the dialect's text. */
export interface CallAuthorizer {
  authorizeText(text: string): Authorized;
}

/**
 * The dialect's method a path below the mount names in REST shape (registry `restPaths`: toncenter's
 * `/api/v2/getAddressBalance`, `/getMasterchainInfo`), or undefined when the path is no such call.
 */
export function restShapedMethod(policy: JsonRpcPolicy, segments: readonly string[]): string | undefined {
  if (policy.restPaths === undefined || segments.length === 0) return undefined;
  const method = segments[segments.length - 1] as string;
  const prefix = `/${segments.slice(0, -1).join("/")}`;
  return policy.restPaths.has(prefix) && policy.methods.has(method) ? method : undefined;
}

/** A boolean's text as FastAPI (pydantic) reads a query parameter typed `bool`, folded to lower case. */
const BOOLEANS: ReadonlyMap<string, boolean> = new Map([
  ...["true", "1", "yes", "on", "t", "y"].map((text) => [text, true] as const),
  ...["false", "0", "no", "off", "f", "n"].map((text) => [text, false] as const),
]);

/**
 * A call in REST shape, as toncenter's own server takes it: a GET's params are its query's parameters (as
 * strings: the server turns the ones it reads as numbers into numbers; booleans and lists as the registry's
 * `restQuery` says), a POST's its body, a JSON object.
 * It becomes the dialect's JSON-RPC call, which passes every check a JSON-RPC caller's does, and the node
 * gets that call at the mount's own URL; the answer is the node's, as over JSON-RPC.
 */
export class RestShapedCall implements RoutedRequest {
  readonly family = "jsonrpc";
  readonly readsBody: boolean;
  readonly #req: IncomingMessage;
  readonly #method: string;
  readonly #query: string;
  readonly #inner: CallAuthorizer;
  readonly #types: JsonRpcPolicy["restQuery"];

  constructor(req: IncomingMessage, mounted: Mounted, method: string, inner: CallAuthorizer) {
    if (req.method !== "GET" && req.method !== "POST")
      throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow: ["GET", "POST"] }, { allow: "GET, POST" });
    // A GET is safe: browsers, proxies and crawlers send one again on their own, so it never broadcasts,
    // and a method the node takes by POST only is refused as the node refuses it (registry `restPostOnly`)
    const policy = mounted.mount.policy.jsonrpc;
    if (req.method === "GET" && (policy?.writes.has(method) || policy?.restPostOnly?.has(method)))
      throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow: ["POST"] }, { allow: "POST" });
    this.readsBody = req.method === "POST";
    this.#req = req;
    this.#method = method;
    this.#query = mounted.admitted.target.query;
    this.#inner = inner;
    this.#types = policy?.restQuery;
  }

  authorize(body: Buffer): Authorized {
    const authorized = this.#inner.authorizeText(
      `{"jsonrpc":"2.0","id":1,"method":${JSON.stringify(this.#method)},"params":${this.#params(body)}}`,
    );
    // the query was the call's params: the node gets the call alone
    const { outgoing } = authorized;
    return outgoing === undefined ? authorized : { ...authorized, outgoing: { ...outgoing, query: "" } };
  }

  #params(body: Buffer): string {
    if (!this.readsBody) {
      const params: Record<string, unknown> = {};
      const types = this.#types;
      for (const [name, value] of new URLSearchParams(this.#query)) {
        // as the node's GET route reads them (registry `restQuery`): its JSON-RPC wrapper would not
        if (types?.lists.has(name)) params[name] = [...((params[name] as string[] | undefined) ?? []), value];
        else if (types?.booleans.has(name)) params[name] = BOOLEANS.get(value.toLowerCase()) ?? value;
        else params[name] = value;
      }
      return JSON.stringify(params);
    }
    if (requestMediaType(this.#req) !== "application/json") throw new GatewayError("UNSUPPORTED_MEDIA_TYPE");
    const text = body.toString("utf8").trim();
    if (text === "") return "{}";
    let params: unknown;
    try {
      params = JSON.parse(text);
    } catch {
      throw new GatewayError("PARSE_ERROR");
    }
    if (typeof params !== "object" || params === null || Array.isArray(params))
      throw new GatewayError("INVALID_REQUEST", {
        reason: "the body is a JSON object of the method's params",
      });
    return text;
  }
}
