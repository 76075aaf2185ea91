import { matchRoute } from "../src/registry/match-route.js";
import type {
  ChainCall,
  FamilyName,
  HeadCall,
  HttpMethod,
  MethodAccess,
  ProbeCall,
  ReadRules,
  StateDumpRule,
  SubscriptionRules,
} from "../src/registry/types.js";
import { checkRegistry, isRouteText } from "./checks.js";
import { type ComputeUnitsModel, compileComputeUnits } from "./compute-units.js";
import { type LoadedRegistry, loadRegistry, RegistryError } from "./load.js";
import type {
  BodyTestSpec,
  ChainSpec,
  EnvelopeRule,
  HeadSpec,
  InterfaceSpec,
  NodeErrorsSpec,
  RegistrySpec,
} from "./registry-types.js";
import { emptyTrie, insertRoute, parseRouteTemplate, shapeOf, type TrieNode } from "./route-template.js";

/** What one mount serves, merged across the interfaces listed on it. */
export interface PolicyModel {
  readonly id: string;
  /** The family handler that serves the mount (src/families/table.ts); see InterfacePolicy.family. */
  readonly family: FamilyName;
  readonly envelope?: string;
  readonly methods: readonly (readonly [string, MethodAccess])[];
  /** Each name of a method served under several (registry `aliases`) → all its names, its own first. */
  readonly aliases?: readonly (readonly [string, readonly string[]])[];
  /** Method or route → the member path of its contract address (`["params", "0", "to"]`). */
  readonly contracts?: Readonly<Record<string, readonly (readonly string[])[]>>;
  /** Method → the member path of the state it puts in place for the call (`["params", "2"]`). */
  readonly stateOverrides?: Readonly<Record<string, readonly string[]>>;
  /** Method → the member path of its option that may dump state, and the values a locked key may ask for. */
  readonly stateDumps?: Readonly<Record<string, StateDumpRule>>;
  readonly routes?: TrieNode;
  /** Methods that submit something (registry `writes`). */
  readonly writes: readonly string[];
  /** Routes that submit something, compiled like `routes`. */
  readonly writeRoutes?: TrieNode;
  /** Its long-poll routes, compiled like `routes`, its long-poll methods, and how long its node holds one. */
  readonly longPolls?: { readonly routes?: TrieNode; readonly methods?: string[]; readonly heldMs: number };
  /** The first of the mount's interfaces that describes its subscriptions. */
  readonly subscriptions?: SubscriptionRules;
  /** The paths below the mount that take the same JSON-RPC calls, of all its interfaces. */
  readonly jsonRpcPaths?: readonly string[];
  /** Paths under which `<path>/<method>` is a call in REST shape, of all its interfaces. */
  readonly restPaths?: readonly string[];
  /** Of its calls in REST shape, the methods taken by POST only, of all its interfaces. */
  readonly restPostOnly?: readonly string[];
  /** Of its calls in REST shape, the query parameters read as booleans or lists, of all its interfaces. */
  readonly restQuery?: { readonly booleans: readonly string[]; readonly lists: readonly string[] };
  /** Whether none of the mount's JSON-RPC nodes has a WebSocket server (registry `webSocketOverHttp`). */
  readonly webSocketOverHttp?: true;
  /** The first of the mount's interfaces that says how its calls name blocks. */
  readonly reads?: ReadRules;
  /** The member of a REST answer that holds the node's error, where the interface says. */
  readonly errorMember?: string;
  /** The gateway's error bodies carry a top-level `message`, as the interface's nodes' do. */
  readonly errorMessage?: true;
  readonly refusedWrite?: readonly BodyTestSpec[];
  /** How its node answers a call's own errors at a 5xx status: an interface's, else its envelope's. */
  readonly nodeErrors?: NodeErrorsSpec;
  /** What one call costs in compute units (compute-units.ts). */
  readonly computeUnits: ComputeUnitsModel;
}

export interface EndpointModel {
  readonly label: string;
  readonly code: string;
  readonly networkName: string;
  readonly environment: string;
  readonly nodeClass: "full" | "archive";
  readonly websocket: boolean;
  readonly public: boolean;
  readonly chainId?: number;
  readonly family: FamilyName;
  readonly chain?: string;
  readonly mounts: readonly MountModel[];
  readonly head: HeadCall;
  readonly blockTimeSeconds: number;
  readonly computeUnitMultiplier: number;
  /**
   * The request body a transaction with the most blobs it may carry needs (`blobBodyBytes`), a write of
   * the most bytes of transactions it may submit (`writeBodyBytes`), or of the most JSON (`writeJsonBytes`).
   */
  readonly bodyBytes?: number;
  readonly example?: { readonly sdk: string; readonly code: string; readonly http?: string };
  readonly archiveLabel?: string;
  readonly dedicatedOnly: readonly { readonly name: string; readonly paths: readonly string[] }[];
}

export interface MountModel {
  readonly path: string;
  readonly policy: string;
  readonly head: HeadCall;
  readonly chain?: ChainCall;
}

export interface RegistryModel {
  readonly file: string;
  readonly sha256: string;
  readonly envelopes: Readonly<Record<string, EnvelopeRule>>;
  readonly policies: readonly PolicyModel[];
  readonly endpoints: readonly EndpointModel[];
  readonly codes: readonly string[];
  readonly environments: readonly string[];
}

/** Loads, checks and normalises a registry file. Throws RegistryError listing every defect found. */
export function buildModel(path: string): RegistryModel {
  const loaded = loadRegistry(path);
  const issues = checkRegistry(loaded);
  if (issues.length > 0) throw new RegistryError(issues);
  return normalise(loaded);
}

function normalise(loaded: LoadedRegistry): RegistryModel {
  const { spec } = loaded;
  const policies = new Map<string, PolicyModel>();
  const endpoints: EndpointModel[] = [];
  const issues = [];

  for (const [n, network] of spec.networks.entries()) {
    const mounts = [...network.mounts]
      .sort((a, b) => b.path.length - a.path.length)
      .map((mount) => {
        const ids = typeof mount.interface === "string" ? [mount.interface] : mount.interface;
        const id = ids.join("+");
        if (!policies.has(id)) policies.set(id, mergePolicy(id, ids, spec));
        // The network's own head call replaces the head of the mount that serves it (codegen checks that
        // one does); every other mount is probed with its first interface's.
        const own =
          network.head && serves(policies.get(id) as PolicyModel, toHeadCall(network.head))
            ? network.head
            : undefined;
        const head = toHeadCall(own ?? (spec.interfaces[ids[0] as string] as InterfaceSpec).head);
        // The first of the mount's interfaces that says how a node names its chain.
        const chainSpec = ids.map((i) => (spec.interfaces[i] as InterfaceSpec).chain).find(Boolean);
        const chain = chainSpec === undefined ? undefined : toChainCall(chainSpec);
        return { path: mount.path, policy: id, head, ...(chain === undefined ? {} : { chain }) };
      });
    // The network's interface style (JSON-RPC, REST or mixed) comes from its interfaces as declared;
    // a JSON-RPC interface that also carries HTTP routes is still a JSON-RPC network.
    const families = new Set(
      network.mounts.flatMap((m) =>
        (typeof m.interface === "string" ? [m.interface] : m.interface).map(
          (i) => (spec.interfaces[i] as InterfaceSpec).family,
        ),
      ),
    );
    const family: FamilyName =
      network.mounts.some((m) => typeof m.interface !== "string" && m.interface.length > 1) ||
      families.size > 1
        ? "mixed"
        : (families.values().next().value as "jsonrpc" | "rest");
    const firstMount = network.mounts[0];
    const firstInterface =
      firstMount &&
      (typeof firstMount.interface === "string" ? firstMount.interface : firstMount.interface[0]);
    const head = toHeadCall(network.head ?? (spec.interfaces[firstInterface ?? ""] as InterfaceSpec).head);
    // The root mount's interfaces first: the URL a caller is shown is the endpoint's root.
    const byRoot = [...network.mounts].sort((a, b) => Number(b.path === "/") - Number(a.path === "/"));
    const example = byRoot
      .flatMap((m) => (typeof m.interface === "string" ? [m.interface] : m.interface))
      .map((id) => (spec.interfaces[id] as InterfaceSpec).example)
      .find((e) => e !== undefined);

    // The archive endpoint a mainnet full endpoint's old-state reads go to (docs/upstreams.md, "Archive").
    const archive = network.endpoints.find((e) => e.nodeClass === "archive");
    for (const [e, endpoint] of network.endpoints.entries()) {
      const archiveLabel =
        archive !== undefined && endpoint.nodeClass === "full" && endpoint.environment === "mainnet"
          ? archive.label
          : undefined;
      if (endpoint.websocket === true && !families.has("jsonrpc")) {
        issues.push(
          loaded.locate(
            ["networks", n, "endpoints", e, "websocket"],
            `endpoint "${endpoint.label}" offers WebSocket but network ${network.code} has no JSON-RPC interface to relay over it`,
          ),
        );
      }
      endpoints.push({
        label: endpoint.label,
        code: network.code,
        networkName: network.name,
        environment: endpoint.environment,
        nodeClass: endpoint.nodeClass,
        websocket: endpoint.websocket ?? false,
        public: endpoint.public ?? false,
        ...(endpoint.chainId === undefined ? {} : { chainId: endpoint.chainId }),
        ...(endpoint.chain === undefined ? {} : { chain: endpoint.chain }),
        family,
        mounts,
        head,
        dedicatedOnly: network.dedicatedOnly ?? [],
        blockTimeSeconds: network.blockTime,
        computeUnitMultiplier: network.computeUnitMultiplier ?? 1,
        ...(network.blobsPerTransaction === undefined
          ? {}
          : { bodyBytes: blobBodyBytes(network.blobsPerTransaction) }),
        ...(network.transactionBytes === undefined
          ? {}
          : { bodyBytes: writeBodyBytes(network.transactionBytes) }),
        ...(network.writeJsonBytes === undefined
          ? {}
          : { bodyBytes: network.writeJsonBytes + ENVELOPE_BYTES }),
        ...(example === undefined ? {} : { example }),
        ...(archiveLabel === undefined ? {} : { archiveLabel }),
      });
    }
  }
  if (issues.length > 0) throw new RegistryError(issues);

  const environments = [...new Set(endpoints.map((e) => e.environment))];
  return {
    file: loaded.file,
    sha256: loaded.sha256,
    envelopes: spec.envelopes,
    policies: [...policies.values()],
    endpoints,
    codes: spec.networks.map((n) => n.code),
    environments,
  };
}

function mergePolicy(id: string, ids: readonly string[], spec: RegistrySpec): PolicyModel {
  const interfaces = ids.map((i) => spec.interfaces[i] as InterfaceSpec);
  const first = interfaces[0] as InterfaceSpec;
  const methods = new Map<string, MethodAccess>();
  let routes: TrieNode | undefined;
  let writeRoutes: TrieNode | undefined;
  let longPolls: { routes?: TrieNode; methods?: string[]; heldMs: number } | undefined;
  const writes = new Set<string>();
  for (const iface of interfaces) {
    for (const text of iface.writes ?? []) {
      if (!isRouteText(text)) writes.add(text);
      else {
        writeRoutes ??= emptyTrie();
        insertRoute(writeRoutes, parseRouteTemplate(text), "shared");
      }
    }
    if (iface.longPolls !== undefined) {
      longPolls ??= { heldMs: iface.longPolls.heldMs };
      longPolls.heldMs = Math.max(longPolls.heldMs, iface.longPolls.heldMs);
      if (iface.longPolls.routes !== undefined) longPolls.routes ??= emptyTrie();
      for (const text of iface.longPolls.routes ?? [])
        insertRoute(longPolls.routes as TrieNode, parseRouteTemplate(text), "shared");
      if (iface.longPolls.methods !== undefined)
        longPolls.methods = [...(longPolls.methods ?? []), ...iface.longPolls.methods];
    }
    for (const access of ["shared", "dedicated", "websocket", "subscribe", "unsubscribe"] as const) {
      for (const name of iface.methods?.[access] ?? []) if (!methods.has(name)) methods.set(name, access);
    }
    for (const access of ["shared", "dedicated", "stream"] as const) {
      for (const text of iface.routes?.[access] ?? []) {
        routes ??= emptyTrie();
        insertRoute(routes, parseRouteTemplate(text), access);
      }
    }
  }
  // A mount that serves a JSON-RPC dialect and HTTP routes too is served by the mixed family handler.
  const family: FamilyName = first.family === "jsonrpc" && routes !== undefined ? "mixed" : first.family;
  const subscriptions = interfaces.find((i) => i.subscriptions !== undefined)?.subscriptions;
  const jsonRpcPaths = [...new Set(interfaces.flatMap((i) => i.jsonRpcPaths ?? []))];
  const restPaths = [...new Set(interfaces.flatMap((i) => i.restPaths ?? []))];
  const restPostOnly = [...new Set(interfaces.flatMap((i) => i.restPostOnly ?? []))];
  const restQuery = {
    booleans: [...new Set(interfaces.flatMap((i) => i.restQuery?.booleans ?? []))],
    lists: [...new Set(interfaces.flatMap((i) => i.restQuery?.lists ?? []))],
  };
  const overHttp = interfaces.every((i) => i.family !== "jsonrpc" || i.webSocketOverHttp === true);
  const errorMember = interfaces.find((i) => i.errorMember !== undefined)?.errorMember;
  const errorMessage = interfaces.some((i) => i.errorMessage === true);
  const refusedWrite = interfaces.flatMap((i) => i.refusedWrite ?? []);
  const nodeErrors =
    interfaces.find((i) => i.nodeErrors !== undefined)?.nodeErrors ??
    envelopeNodeErrors(first.envelope === undefined ? undefined : spec.envelopes[first.envelope]);
  const reads = mountReads(interfaces);
  const contracts: Record<string, string[][]> = {};
  const stateOverrides: Record<string, string[]> = {};
  const stateDumps: Record<string, StateDumpRule> = {};
  for (const iface of interfaces) {
    for (const [name, rule] of Object.entries(iface.stateDumps ?? {}))
      stateDumps[name] ??= { at: rule.at.split("."), allow: [...rule.allow] };
    // an entry's places together, from the first interface that names the method or route
    const own: Record<string, string[][]> = {};
    for (const [name, where] of Object.entries(iface.contracts ?? {}))
      for (const path of [where].flat())
        for (const [key, at] of contractEntries(name, path)) own[key] = [...(own[key] ?? []), at];
    for (const [key, paths] of Object.entries(own)) contracts[key] ??= paths;
    for (const [name, path] of Object.entries(iface.stateOverrides ?? {}))
      stateOverrides[name] ??= path.split(".");
  }
  return {
    id,
    family,
    ...(first.envelope === undefined ? {} : { envelope: first.envelope }),
    methods: [...methods.entries()],
    ...(routes === undefined ? {} : { routes }),
    writes: [...writes],
    ...aliasesOf(interfaces),
    ...(writeRoutes === undefined ? {} : { writeRoutes }),
    ...(longPolls === undefined ? {} : { longPolls }),
    ...(subscriptions === undefined
      ? {}
      : { subscriptions: { pinned: [], headChanges: [], ...subscriptions } }),
    ...(jsonRpcPaths.length === 0 ? {} : { jsonRpcPaths }),
    ...(overHttp && first.family === "jsonrpc" ? { webSocketOverHttp: true as const } : {}),
    ...(restPaths.length === 0 ? {} : { restPaths }),
    ...(restPostOnly.length === 0 ? {} : { restPostOnly }),
    ...(restQuery.booleans.length + restQuery.lists.length === 0 ? {} : { restQuery }),
    ...(errorMember === undefined ? {} : { errorMember }),
    ...(errorMessage ? { errorMessage: true as const } : {}),
    ...(refusedWrite.length === 0 ? {} : { refusedWrite }),
    ...(nodeErrors === undefined ? {} : { nodeErrors }),
    ...(reads === undefined ? {} : { reads }),
    ...(Object.keys(contracts).length === 0 ? {} : { contracts }),
    ...(Object.keys(stateOverrides).length === 0 ? {} : { stateOverrides }),
    ...(Object.keys(stateDumps).length === 0 ? {} : { stateDumps }),
    computeUnits: compileComputeUnits(interfaces),
  };
}

/**
 * A mount's reads: the first interface's that has any; beside it, another dialect served at the same root
 * (the Zilliqa native API beside its EVM one) adds the calls it lists as reading at the head (`atHead`), its
 * other rules being the first's.
 */
function mountReads(interfaces: readonly InterfaceSpec[]): InterfaceSpec["reads"] {
  const all = interfaces.flatMap((i) => (i.reads === undefined ? [] : [i.reads]));
  const [first, ...others] = all;
  if (first === undefined || others.length === 0) return first;
  const atHead = [...new Set([...(first.atHead ?? []), ...others.flatMap((r) => r.atHead ?? [])])];
  return atHead.length === 0 ? first : { ...first, atHead };
}

/**
 * A JSON-RPC envelope's `errorStatus` as the rule every interface may write: a body that is a JSON-RPC
 * error (its `error.code` a number) is the node's answer, one of `unavailableCodes` the node unable to serve.
 */
function envelopeNodeErrors(rule: EnvelopeRule | undefined): NodeErrorsSpec | undefined {
  if (rule?.errorStatus === undefined) return undefined;
  return {
    status: rule.errorStatus,
    answer: { member: "error.code", type: "number" },
    ...(rule.unavailableCodes === undefined || rule.unavailableCodes.length === 0
      ? {}
      : { unavailable: { member: "error.code", in: rule.unavailableCodes } }),
    ...(rule.unavailableAlsoAt === undefined ? {} : { unavailableAt: rule.unavailableAlsoAt }),
  };
}

/** Whether a mount's merged policy serves a head call: its method, or a route its trie reaches. */
function serves(policy: PolicyModel, head: HeadCall): boolean {
  if (head.kind === "jsonrpc") return policy.methods.some(([name]) => name === head.method);
  if (policy.routes === undefined) return false;
  const segments = head.path.split("/").filter((s) => s !== "");
  return matchRoute(policy.routes, head.method, segments).kind === "match";
}

function toHeadCall(head: HeadSpec): HeadCall {
  return { ...toProbeCall(head), encoding: head.encoding };
}

function toChainCall(chain: ChainSpec): ChainCall {
  const call = toProbeCall(chain);
  return chain.encoding === undefined ? call : { ...call, encoding: chain.encoding };
}

/** A head or chain call as the registry writes it, in the shape the prober sends. */
function toProbeCall(spec: HeadSpec | ChainSpec): ProbeCall {
  const field = spec.field.split(".");
  if (spec.method !== undefined) {
    return {
      kind: "jsonrpc",
      method: spec.method,
      ...(spec.params === undefined ? {} : { params: spec.params }),
      field,
    };
  }
  const route = parseRouteTemplate(spec.route as string);
  return {
    kind: "rest",
    method: route.methods[0] as HttpMethod,
    path: `/${route.segments.map((s) => (s.kind === "static" ? s.value : "")).join("/")}`,
    ...(spec.body === undefined ? {} : { body: spec.body }),
    field,
  };
}

/**
 * The body an `eth_sendRawTransaction` of `blobs` blobs needs: each blob's 128 KiB twice over in hex, with
 * its commitment and proofs (the cell proofs of EIP-7594 are 128 × 48 bytes a blob), and 64 KiB for the
 * transaction and the JSON-RPC envelope around it.
 */
function blobBodyBytes(blobs: number): number {
  return blobs * 2 * (128 * 1024 + 128 * 48 + 2 * 48) + 64 * 1024;
}

/** What a write's body holds beside its transaction or its payload: the JSON-RPC envelope and the call's other members. */
const ENVELOPE_BYTES = 64 * 1024;

/** The body a write of `bytes` bytes of transactions needs: each byte twice over in hex, and the envelope. */
function writeBodyBytes(bytes: number): number {
  return bytes * 2 + ENVELOPE_BYTES;
}

/**
 * A `contracts` entry as the data plane looks it up: a method as it is; a route once per HTTP method it names
 * (`GET|POST /wallet/getcontract`), by its shape (`GET /accounts/{}/code`, as families/rest.ts matches it),
 * and a path parameter it names (`path.address`) by its segment's place (`path.1`).
 */
function contractEntries(name: string, path: string): [string, string[]][] {
  const at = path.split(".");
  if (!name.includes(" ")) return [[name, at]];
  const route = parseRouteTemplate(name);
  if (at[0] === "path") {
    const place = route.segments.findIndex((s) => s.kind !== "static" && s.name === at[1]);
    at.splice(1, 1, String(place));
  }
  return route.methods.map((method) => [`${method} ${shapeOf(route)}`, at]);
}

/** Each name of a method the mount's interfaces serve under several → all its names, its own first. */
function aliasesOf(interfaces: readonly InterfaceSpec[]): { aliases?: [string, string[]][] } {
  const names = new Map<string, string[]>();
  for (const iface of interfaces)
    for (const [alias, primary] of Object.entries(iface.aliases ?? {})) {
      const all = names.get(primary) ?? [primary];
      if (!all.includes(alias)) all.push(alias);
      names.set(primary, all);
    }
  const entries = [...names.values()].flatMap((all) => all.map((name): [string, string[]] => [name, all]));
  return entries.length === 0 ? {} : { aliases: entries.sort(([a], [b]) => a.localeCompare(b)) };
}
