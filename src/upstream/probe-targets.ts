import type {
  ChainCall,
  Endpoint,
  HeadBlockCall,
  HeadCall,
  HttpMethod,
  Mount,
  ProbeCall,
} from "../registry/types.js";
import { type ProbeRequest, probeRequest, withHash } from "./probe-call.js";

// What the prober asks a group's nodes, read once from the registry: the mount it probes, its head call,
// its chain call, and the calls its cache rules read the finalized and head blocks by (prober.ts asks them).

/** A registry call, the request that carries it to a group's upstreams, and where its answer holds an error. */
export interface Probe<Call extends ProbeCall> {
  readonly call: Call;
  readonly request: ProbeRequest;
  readonly errorMember: string | undefined;
}

/**
 * How a node is asked for its finalized height: one call whose answer holds it, or one whose answer
 * names the finalized block and a second (`heightBy`) that reads that block's height.
 */
export interface FinalityProbe {
  readonly first: Probe<ChainCall>;
  readonly heightBy: ((hash: unknown) => Probe<HeadCall>) | undefined;
  /** Where the first answer holds the finalized block's hash (registry `hash`), when it names no hash itself. */
  readonly hash: Probe<ChainCall> | undefined;
}

/** How a group's upstreams say which chain they are on, and the chain its label is. */
export interface ChainCheck extends Probe<ChainCall> {
  readonly expected: string;
}

/** How a node's head block is read with its hash and parent's, to see a reorg (src/cache/). */
export interface HeadBlockProbe {
  readonly probe: Probe<HeadCall>;
  readonly rule: HeadBlockCall;
  /** The call that reads the header of the block whose hash the first answer names (registry `headerBy`). */
  readonly headerBy: ((hash: unknown) => Probe<HeadCall>) | undefined;
}

/**
 * The mount whose head call probes a group: the group's own mount, or for an endpoint-wide list, the mount
 * that serves the endpoint's head call.
 */
export function probedMount(
  endpoint: Endpoint,
  groupMount: string,
): { mount: Mount; head: HeadCall } | undefined {
  if (groupMount !== "*") {
    const mount = endpoint.mounts.find((m) => m.path === groupMount);
    const head = mount === undefined ? undefined : mountHead(mount, endpoint);
    return mount === undefined || head === undefined ? undefined : { mount, head };
  }
  const mount = endpoint.mounts.find((m) => serves(m, endpoint.head));
  return mount === undefined ? undefined : { mount, head: endpoint.head };
}

/**
 * How a group's upstreams are asked which chain they are on: the probed mount's chain call, else, for an
 * endpoint-wide list (whose upstreams serve every mount), another mount's, where the endpoint says which
 * chain its nodes must answer: its `chainId` for a call that answers a number, its `chain` for one that
 * answers text. None where the registry says nothing.
 */
export function chainCheck(endpoint: Endpoint, probed: Mount, endpointWide: boolean): ChainCheck | undefined {
  const candidates = endpointWide ? [probed, ...endpoint.mounts.filter((m) => m !== probed)] : [probed];
  for (const mount of candidates) {
    const call = mount.chain;
    const expected = call?.encoding === undefined ? endpoint.chain : endpoint.chainId?.toString();
    if (call !== undefined && expected !== undefined) return { ...probeOf(call, mount), expected };
  }
  return undefined;
}

/** The head block call of a mount's cache rules, as the prober sends it (the whole answer is read). */
export function headBlockProbe(mount: Mount): HeadBlockProbe | undefined {
  const { policy } = mount;
  const rule = (policy.jsonrpc?.reads ?? policy.restReads)?.cache?.headBlock;
  if (rule === undefined) return undefined;
  const call: HeadCall =
    "route" in rule
      ? { ...restCall(rule), field: [], encoding: rule.encoding }
      : {
          kind: "jsonrpc",
          method: rule.method,
          params: rule.params,
          field: [],
          encoding: rule.encoding,
        };
  const headerBy = "route" in rule ? undefined : rule.headerBy;
  return {
    probe: probeOf(call, mount),
    rule,
    headerBy:
      headerBy === undefined
        ? undefined
        : (hash) =>
            probeOf(
              {
                kind: "jsonrpc",
                method: headerBy.method,
                params: withHash(headerBy.params, hash),
                field: [],
                encoding: rule.encoding,
              },
              mount,
            ),
  };
}

/** A static route the interface serves (codegen/checks.ts) as a call: its first method, as a head route's. */
function restCall(rule: { readonly route: string; readonly body?: unknown }) {
  const [methods = "", path = "/"] = rule.route.split(" ");
  return {
    kind: "rest" as const,
    method: methods.split("|")[0] as HttpMethod,
    path,
    ...(rule.body === undefined ? {} : { body: rule.body }),
  };
}

/** The depth below the served head that a mount's cache rules call final (`finalized: {depth}`), if they do. */
export function finalityDepthOf(mount: Mount): number | undefined {
  const rule = (mount.policy.jsonrpc?.reads ?? mount.policy.restReads)?.cache?.finalized;
  return rule !== undefined && "depth" in rule ? rule.depth : undefined;
}

/** The finality calls of a mount's cache rules, as the prober sends them; none for a depth or no rule. */
export function finalityProbe(mount: Mount): FinalityProbe | undefined {
  const { policy } = mount;
  const rule = (policy.jsonrpc?.reads ?? policy.restReads)?.cache?.finalized;
  if (rule === undefined || "depth" in rule) return undefined;
  if ("route" in rule) {
    const call = restCall(rule);
    return {
      first: probeOf({ ...call, field: rule.field, encoding: rule.encoding }, mount),
      heightBy: undefined,
      hash: rule.hash === undefined ? undefined : probeOf({ ...call, field: rule.hash }, mount),
    };
  }
  if (!("heightBy" in rule)) {
    const { hash, ...call } = rule;
    return {
      first: probeOf({ kind: "jsonrpc", ...call }, mount),
      heightBy: undefined,
      hash: hash === undefined ? undefined : probeOf({ kind: "jsonrpc", ...call, field: hash }, mount),
    };
  }
  const { heightBy, ...first } = rule;
  return {
    first: probeOf({ kind: "jsonrpc", ...first }, mount),
    heightBy: (hash) =>
      probeOf({ kind: "jsonrpc", ...heightBy, params: withHash(heightBy.params, hash) }, mount),
    hash: undefined,
  };
}

export function probeOf<Call extends ProbeCall>(call: Call, mount: Mount): Probe<Call> {
  return { call, request: probeRequest(call, mount.path), errorMember: mount.policy.errorMember };
}

function mountHead(mount: Mount, endpoint: Endpoint): HeadCall | undefined {
  return mount.head ?? (serves(mount, endpoint.head) ? endpoint.head : undefined);
}

function serves(mount: Mount, call: HeadCall): boolean {
  if (call.kind === "jsonrpc") return mount.policy.jsonrpc?.methods.has(call.method) ?? false;
  return mount.policy.routes !== undefined;
}

/** A call as the registry writes it, for the log. */
export function callName(call: ProbeCall): string {
  return call.kind === "jsonrpc" ? call.method : `${call.method} ${call.path}`;
}
