import { createServer, type IncomingMessage, type Server } from "node:http";
import type { Registry } from "prom-client";
import { sendError, sendJson } from "../errors/respond.js";
import { GatewayError } from "../errors/table.js";
import { readBody } from "../http/body.js";
import type { Logger } from "../log.js";
import { type MetricsText, scrape } from "../metrics/registry.js";
import type { ServedUpstreams } from "../metrics/scrape-readings.js";
import type { HealthReport } from "../upstream/health.js";
import type { Upstream, UpstreamTable } from "../upstream/upstreams.js";
import type { Readiness, ReadyReport } from "./readiness.js";

/** One process's upstreams, as GET /upstreams shows them. */
export interface ProcessReport {
  readonly pid: number;
  readonly labels: readonly LabelReport[];
  /** Why a cluster's worker is missing from the report: it did not answer in time. */
  readonly silent?: string;
}

export interface LabelReport {
  readonly label: string;
  /** The registry mount the upstreams serve, or "*" for the label's endpoint-wide list. */
  readonly mount: string;
  /**
   * The highest head this process served the label (answers/served-head.ts), or null before any: the mark
   * its head-relative reads wait for, raised by the other workers and instances where they share it.
   */
  readonly servedHead: number | null;
  readonly upstreams: readonly ({ name: string; tier: string; weight: number } & HealthReport)[];
}

export interface CordonRequest {
  readonly label: string;
  readonly upstream: string;
  readonly cordoned: boolean;
}

/** What the operator API reads and changes: this process, or every worker of a cluster (proxy/run.ts). */
export interface OperatorView {
  report(): Promise<readonly ProcessReport[]>;
  /** How many upstreams matched, over every process. */
  cordon(request: CordonRequest): Promise<number>;
  metrics(): Promise<MetricsText>;
  ready(): Promise<ReadyReport>;
}

/** The view of this process: its own upstream table, registry and readiness. */
/** This process's view: `cordon` reaches every config it serves (proxy/server.ts `cordon`). */
export function localView(
  table: ServedUpstreams,
  cordon: (request: CordonRequest) => number,
  registry: Registry,
  readiness: Readiness,
): OperatorView {
  return {
    report: async () => [reportOf(table)],
    cordon: async (request) => cordon(request),
    metrics: () => scrape(registry),
    ready: async () => readiness.report(),
  };
}

export function reportOf(table: ServedUpstreams): ProcessReport {
  // what a node still has out on configs a reload replaced, shown on the current config's node of the same
  // name, as gateway_upstream_in_flight and gateway_upstream_held show it (metrics/scrape-readings.ts)
  const earlier = new Map<string, { inFlight: number; held: number }>();
  for (const old of table.retired?.() ?? [])
    for (const group of old.groups())
      for (const { name, health } of group.members) {
        const key = `${group.label}\n${group.mount}\n${name}`;
        const sum = earlier.get(key) ?? { inFlight: 0, held: 0 };
        earlier.set(key, { inFlight: sum.inFlight + health.inFlight, held: sum.held + health.held });
      }
  return {
    pid: process.pid,
    labels: table.groups().map((group) => ({
      label: group.label,
      mount: group.mount,
      servedHead: group.served.height < 0 ? null : group.served.height,
      upstreams: group.members.map((member) => {
        const report = member.health.report();
        const old = earlier.get(`${group.label}\n${group.mount}\n${member.name}`);
        return {
          name: member.name,
          tier: member.tier,
          weight: member.weight,
          ...report,
          ...(old === undefined
            ? {}
            : { inFlight: report.inFlight + old.inFlight, held: report.held + old.held }),
        };
      }),
    })),
  };
}

export function cordonIn(
  table: Pick<UpstreamTable, "groups">,
  request: CordonRequest,
  reaches: (member: Upstream) => boolean = () => true,
): number {
  let matched = 0;
  for (const group of table.groups()) {
    if (group.label !== request.label) continue;
    for (const member of group.members) {
      if (member.name !== request.upstream || !reaches(member)) continue;
      member.health.cordon(request.cordoned);
      matched += 1;
    }
  }
  return matched;
}

/**
 * The operator API, on its own listener (`operator.listen`, 127.0.0.1:8082 by default), never on the
 * public port. docs/upstreams.md and docs/operations.md:
 *
 *   GET  /upstreams            every label's upstreams: state, head, lag, latency, error rate, in flight
 *   POST /upstreams/cordon     {"label": <label>, "upstream": <name>}: out of rotation until uncordoned
 *   POST /upstreams/uncordon   the same body: back to what its probes say
 *   GET  /metrics              Prometheus' text format
 *   GET  /healthz              200 while the process runs
 *   GET  /readyz               200 while it can serve, 503 with the reasons otherwise
 */
export function createOperatorApi(view: OperatorView, logger: Logger): Server {
  return createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (req, res) => {
    if (fromPage(req)) {
      sendError(res, new GatewayError("OPERATOR_PAGE_REFUSED"), "rest", "null", "same-origin");
      return;
    }
    if (reads(req) && (req.url ?? "").split("?")[0] === "/metrics") {
      view.metrics().then(
        ({ contentType, text }) => res.writeHead(200, { "content-type": contentType }).end(text),
        (error: unknown) => {
          logger.log("error", "operator api", { error: String(error) });
          sendError(res, new GatewayError("INTERNAL"), "rest", "null", "same-origin");
        },
      );
      return;
    }
    answer(req, view, logger).then(
      ([status, body]) => sendJson(res, status, JSON.stringify(body), undefined, "same-origin"),
      (error: unknown) => {
        if (!(error instanceof GatewayError)) logger.log("error", "operator api", { error: String(error) });
        const refusal = error instanceof GatewayError ? error : new GatewayError("INTERNAL");
        sendError(res, refusal, "rest", "null", "same-origin");
      },
    );
  });
}

/**
 * Whether a web page made the request: browsers send `Origin` with every POST and every request across
 * origins, and `Sec-Fetch-Site` with every request, `none` when the user typed the address. A page whose
 * own name points at this address (DNS rebinding) is of this listener's origin to the browser, so the
 * JSON-only cordon and the missing CORS headers do not keep it out; these headers do. The operator's tools
 * (curl, the CLI, Prometheus) send neither.
 */
function fromPage(req: IncomingMessage): boolean {
  const site = req.headers["sec-fetch-site"];
  return req.headers.origin !== undefined || (site !== undefined && site !== "none");
}

/**
 * GET, or HEAD, which every HTTP server must answer as it answers GET, without the body (RFC 9110, 9.1 and
 * 9.3.2): a balancer's health check is often `HEAD /readyz` (HAProxy's `option httpchk HEAD …`), and a 405
 * would mark every proxy down. Node's ServerResponse sends no body to a HEAD request.
 */
function reads(req: IncomingMessage): boolean {
  return req.method === "GET" || req.method === "HEAD";
}

async function answer(req: IncomingMessage, view: OperatorView, logger: Logger): Promise<[number, unknown]> {
  const path = (req.url ?? "/").split("?")[0];
  if (path === "/healthz" || path === "/readyz" || path === "/metrics") {
    if (!reads(req))
      throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow: ["GET", "HEAD"] }, { allow: "GET, HEAD" });
    if (path === "/healthz") return [200, { status: "alive" }];
    const report = await view.ready();
    return [report.ready ? 200 : 503, report];
  }
  if (path === "/upstreams") {
    if (!reads(req))
      throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow: ["GET", "HEAD"] }, { allow: "GET, HEAD" });
    return [200, { processes: await view.report() }];
  }
  if (path === "/upstreams/cordon" || path === "/upstreams/uncordon") {
    if (req.method !== "POST")
      throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow: ["POST"] }, { allow: "POST" });
    const { label, upstream } = await target(req);
    const cordoned = path.endsWith("/cordon");
    const matched = await view.cordon({ label, upstream, cordoned });
    if (matched === 0) {
      // which of the two names is wrong, and what the label does have
      const names = new Set(
        (await view.report()).flatMap((p) =>
          p.labels.filter((l) => l.label === label).flatMap((l) => l.upstreams.map((u) => u.name)),
        ),
      );
      const reason =
        names.size === 0
          ? `no upstream is configured for the label ${label}`
          : `${label}'s upstreams are ${[...names].join(", ")}`;
      throw new GatewayError("UPSTREAM_NOT_FOUND", { label, upstream, reason });
    }
    logger.log("warn", cordoned ? "upstream cordoned" : "upstream uncordoned", { label, upstream });
    return [200, { label, upstream, cordoned, matched }];
  }
  throw new GatewayError("OPERATOR_ROUTE_NOT_FOUND", { routes: OPERATOR_ROUTES });
}

/** What an unknown path's answer lists, as the comment above createOperatorApi does. */
const OPERATOR_ROUTES = [
  "GET /upstreams",
  "POST /upstreams/cordon",
  "POST /upstreams/uncordon",
  "GET /metrics",
  "GET /healthz",
  "GET /readyz",
];

async function target(req: IncomingMessage): Promise<{ label: string; upstream: string }> {
  // A page in an operator's browser can POST a form or text/plain to any address without asking first;
  // it cannot send application/json across origins without a preflight, which this API never allows.
  const media = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (media !== "application/json") throw new GatewayError("UNSUPPORTED_MEDIA_TYPE");
  let body: unknown;
  try {
    body = JSON.parse((await readBody(req, 4096)).toString("utf8"));
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    throw new GatewayError("PARSE_ERROR");
  }
  const { label, upstream } = (body ?? {}) as { label?: unknown; upstream?: unknown };
  for (const [field, value] of [
    ["label", label],
    ["upstream", upstream],
  ] as const)
    if (typeof value !== "string" || value === "")
      throw new GatewayError("INVALID_FIELD", { field, reason: 'send {"label": "…", "upstream": "…"}' });
  return { label: label as string, upstream: upstream as string };
}
