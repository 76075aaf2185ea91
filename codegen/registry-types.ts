// The registry file as the schema (registry/schema.json) admits it.

import type { ReadRules, SubscriptionEnd, SubscriptionKind } from "../src/registry/types.js";

export type ParamsForm = "array" | "object" | "null" | "absent";
export type JsonRpcVersion = "1.0" | "2.0" | "absent";
export type Encoding = "integer" | "hex-quantity" | "decimal-string";

export interface EnvelopeRule {
  jsonrpc: JsonRpcVersion[];
  params: ParamsForm[];
  batch: boolean;
  plainTextBody?: boolean;
  /** A 1.0 call is answered in 1.0's shape (JsonRpcPolicy.legacyReplies). */
  legacyReplies?: boolean;
  /** The status of the node's empty answer to notifications (JsonRpcPolicy.notificationStatus). */
  notificationStatus?: 200 | 204;
  /** The status of the node's own JSON-RPC errors (InterfacePolicy.nodeErrors). */
  errorStatus?: number;
  /** The codes of a node that cannot serve yet (InterfacePolicy.nodeErrors). */
  unavailableCodes?: number[];
  /** Other statuses at which the node may answer such a code (NodeErrors.unavailableAt). */
  unavailableAlsoAt?: number[];
  /** The node's errors carry nearcore's `name` and `cause` (JsonRpcPolicy.errorCauses). */
  errorCauses?: boolean;
}

/** A test of one member of a JSON answer, as written (src/registry/types.ts BodyTest). */
export interface BodyTestSpec {
  member: string;
  is?: string | number | boolean | null;
  type?: "number" | "string" | "boolean" | "object";
  matches?: string;
  in?: (string | number)[];
}

export interface NodeErrorsSpec {
  status: number;
  answer: BodyTestSpec;
  unavailable?: BodyTestSpec;
  unavailableAt?: number[];
}

export interface MethodGroups {
  shared: string[];
  dedicated?: string[];
  websocket?: string[];
  subscribe?: string[];
  unsubscribe?: string[];
  deny?: string[];
}

export interface RouteGroups {
  shared?: string[];
  dedicated?: string[];
  stream?: string[];
  deny?: string[];
}

export interface HeadSpec {
  method?: string;
  params?: unknown[] | Record<string, unknown>;
  route?: string;
  body?: Record<string, unknown>;
  field: string;
  encoding: Encoding;
}

/**
 * How a node says which chain it is on. With an `encoding` the answer is a number, compared with an
 * endpoint's `chainId`; without, it is text, compared with an endpoint's `chain`.
 */
export interface ChainSpec {
  method?: string;
  params?: unknown[] | Record<string, unknown>;
  route?: string;
  body?: Record<string, unknown>;
  field: string;
  encoding?: Encoding;
}

export interface InterfaceSpec {
  title: string;
  source: string;
  family: "jsonrpc" | "rest";
  envelope?: string;
  methods?: MethodGroups;
  /** Another name the node serves a method under → the method's own name (sc-rpc-api `aliases`). */
  aliases?: Record<string, string>;
  routes?: RouteGroups;
  /** Methods and routes that submit something: the gateway never sends one of them to a node twice. */
  writes?: string[];
  /** Routes whose node holds them until something happens, and for how long (InterfacePolicy.longPolls). */
  longPolls?: { routes?: string[]; methods?: string[]; heldMs: number };
  head: HeadSpec;
  chain?: ChainSpec;
  /** A REST interface whose nodes answer errors with a success status: the member that holds the error. */
  errorMember?: string;
  /** A REST interface whose nodes' error bodies carry a top-level `message` (InterfacePolicy.errorMessage). */
  errorMessage?: true;
  /** Answers to a write that say the node refused it at a success status (InterfacePolicy.refusedWrite). */
  refusedWrite?: BodyTestSpec[];
  /** How its node answers a call's own errors at a 5xx status (InterfacePolicy.nodeErrors). */
  nodeErrors?: NodeErrorsSpec;
  /** How the WebSocket relay moves subscriptions (src/registry/types.ts SubscriptionRules, as written). */
  subscriptions?: SubscriptionsSpec;
  /** Paths below the mount that take the same JSON-RPC calls (JsonRpcPolicy.paths). */
  jsonRpcPaths?: string[];
  /** Paths under which `<path>/<method>` is a call in REST shape (JsonRpcPolicy.restPaths). */
  restPaths?: string[];
  /** Of its calls in REST shape, the methods taken by POST only (JsonRpcPolicy.restPostOnly). */
  restPostOnly?: string[];
  /** Of its calls in REST shape, the query parameters read as booleans or lists (JsonRpcPolicy.restQuery). */
  restQuery?: { booleans?: string[]; lists?: string[] };
  /** The node has no WebSocket server: the gateway sends a socket's messages to it over HTTP. */
  webSocketOverHttp?: true;
  /** How its calls name blocks (src/registry/types.ts ReadRules, as written). */
  reads?: ReadRules;
  /**
   * Method or route → where its contract address sits (`params.0.to`, `body.contract_address`, `query.value`), or each
   * place where it names contracts when it names them in more than one.
   */
  contracts?: Record<string, string | string[]>;
  /** Method → where it takes state put in place for the call (`params.2`), refused to a key locked to its contracts. */
  stateOverrides?: Record<string, string>;
  /**
   * Method → where it takes the option (a tracer, trace types) some of whose values answer the state of every
   * account touched: a key locked to its contracts may ask only for those in `allow` ("" for the option left out).
   */
  stateDumps?: Record<string, { at: string; allow: string[] }>;
  /** The dashboard's first call in the interface's usual SDK; `{url}` is the endpoint's URL. */
  example?: { sdk: string; code: string; http?: string };
  /** What one call costs in compute units (docs/compute-units.md). */
  computeUnits: ComputeUnitsSpec;
}

export interface ComputeUnitsSpec {
  default: number;
  /** Method (or `prefix*`) → its cost. */
  methods?: Record<string, number>;
  /** Route as in `routes` (`GET /chains/{chain}/blocks/{block}`) → its cost. */
  routes?: Record<string, number>;
  /** Every method and route in `writes`, unless named above. */
  writes?: number;
  /** The factor of a call an archive node answers. */
  archive?: number;
}

export interface SubscriptionsSpec {
  idMember: string;
  pinned?: string[];
  ends?: Record<string, SubscriptionEnd>;
  /** Subscribe methods whose notification says the node's head changed though its height did not. */
  headChanges?: string[];
  kinds: SubscriptionKind[];
}

export interface MountSpec {
  path: string;
  interface: string | string[];
}

export interface EndpointSpec {
  label: string;
  /** `mainnet`, `testnet`, `archive`, or one of the network's own `testnets` (codegen/checks.ts). */
  environment: string;
  nodeClass: "full" | "archive";
  websocket?: boolean;
  public?: boolean;
  chainId?: number;
  /** The chain as its nodes name it, for an interface whose chain call answers text. */
  chain?: string;
  labelRule?: string;
}

export interface NetworkSpec {
  code: string;
  name: string;
  mainnet?: boolean;
  /** The network's named testnets: each is an environment of its own, with the label `<code>-<name>`. */
  testnets?: string[];
  /** Why the endpoints declare no chainId although their interface serves eth_chainId. */
  noChainId?: string;
  /** Seconds between blocks (one unit of the head call's height), for the lag threshold in seconds. */
  blockTime: number;
  /** What its calls cost against its interfaces' compute units; 1 when absent. */
  computeUnitMultiplier?: number;
  /** The most blobs one of its transactions may carry (EndpointModel.bodyBytes). */
  blobsPerTransaction?: number;
  /** The most bytes of transactions one of its writes may submit (EndpointModel.bodyBytes). */
  transactionBytes?: number;
  /** The most bytes of JSON one of its writes may carry, as its nodes bound it (EndpointModel.bodyBytes). */
  writeJsonBytes?: number;
  mounts: MountSpec[];
  head?: HeadSpec;
  dedicatedOnly?: { name: string; paths: string[] }[];
  endpoints: EndpointSpec[];
}

export interface RegistrySpec {
  version: 1;
  envelopes: Record<string, EnvelopeRule>;
  interfaces: Record<string, InterfaceSpec>;
  networks: NetworkSpec[];
}
