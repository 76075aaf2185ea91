import type { LabelUpstreams } from "../config/types.js";
import type { Endpoint } from "../registry/types.js";

/**
 * The registry's endpoints the deployment serves: those its config gives upstreams. A customer is offered,
 * e-mailed and shown only these, for a key to a label with no node answers 503 to every call. A config that
 * gives none at all (a control plane run with its own config, the embedded default before its demo starts
 * nodes) serves what its proxies' configs say, which it cannot read: every endpoint is offered.
 */
export function servedEndpoints(
  endpoints: ReadonlyMap<string, Endpoint>,
  upstreams: Readonly<Record<string, LabelUpstreams>> | undefined,
): ReadonlyMap<string, Endpoint> {
  const configured = Object.entries(upstreams ?? {}).filter(([, list]) => hasAny(list));
  if (configured.length === 0) return endpoints;
  const labels = new Set(configured.map(([label]) => label));
  return new Map([...endpoints].filter(([label]) => labels.has(label)));
}

/** The network codes of `endpoints`. */
export function networksOf(endpoints: ReadonlyMap<string, Endpoint>): ReadonlySet<string> {
  return new Set([...endpoints.values()].map((endpoint) => endpoint.code));
}

function hasAny(list: LabelUpstreams): boolean {
  return Array.isArray(list) ? list.length > 0 : Object.values(list).some((mount) => mount.length > 0);
}
