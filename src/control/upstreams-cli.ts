import { isIPv6 } from "node:net";
import type { GatewayConfig } from "../config/types.js";
import { type ErrorCode, GatewayError } from "../errors/table.js";
import { UsageError } from "./admin-failure.js";

export const UPSTREAMS_USAGE = `  upstreams list [--proxy <url>]           every label's served head, and its upstreams: state, head, lag, latency, errors
  upstreams cordon --label <label> --upstream <name> [--proxy <url>]
                                            takes it out of rotation until uncordoned
  upstreams uncordon --label <label> --upstream <name> [--proxy <url>]`;

interface UpstreamsValues {
  label?: string;
  upstream?: string;
  proxy?: string;
}

/**
 * The operator CLI's upstream commands: they ask a running proxy's operator API (docs/upstreams.md), at
 * `--proxy` or at the deployment config's `operator.listen`.
 */
export async function upstreamsCommand(
  verb: string | undefined,
  values: UpstreamsValues,
  config: GatewayConfig,
): Promise<number> {
  const listen = config.operator?.listen;
  // An IPv6 address goes in brackets in a URL (`http://[fd00::10]:8082`): a proxy's operator API is on its
  // host's private address (GATEWAY_OPERATOR_HOST), which may be one.
  const host = listen !== undefined && isIPv6(listen.host) ? `[${listen.host}]` : listen?.host;
  // `http://host:8082/` is how a URL parser writes `http://host:8082`: the routes follow one slash, not two
  const base =
    values.proxy?.replace(/\/+$/, "") ?? (listen === undefined ? undefined : `http://${host}:${listen.port}`);
  if (base === undefined)
    throw new GatewayError("INVALID_FIELD", {
      field: "--proxy",
      reason: "the config has no operator listener",
    });
  if (verb === "list") {
    const answer = (await call(`${base}/upstreams`)) as {
      processes: { pid: number; labels: LabelRow[]; silent?: string }[];
    };
    for (const process of answer.processes) {
      // a worker that gave the primary no answer has no rows: why is its line
      if (answer.processes.length > 1)
        console.log(`process ${process.pid}${process.silent === undefined ? "" : `  ${process.silent}`}`);
      for (const row of process.labels) {
        // the head callers are served at least, which a node must have reached for reads at the head
        console.log(`${where(row)}  served head ${row.servedHead ?? "-"}`);
        for (const upstream of row.upstreams) console.log(line(row, upstream));
      }
    }
    return 0;
  }
  if (verb === "cordon" || verb === "uncordon") {
    if (values.label === undefined) throw new GatewayError("INVALID_FIELD", { field: "--label" });
    if (values.upstream === undefined) throw new GatewayError("INVALID_FIELD", { field: "--upstream" });
    const answer = (await call(`${base}/upstreams/${verb}`, {
      label: values.label,
      upstream: values.upstream,
    })) as {
      matched: number;
    };
    console.log(
      `${values.label} ${values.upstream}: ${verb === "cordon" ? "cordoned" : "uncordoned"} (${answer.matched})`,
    );
    return 0;
  }
  throw new UsageError(
    verb === undefined ? '"upstreams" needs list, cordon or uncordon' : `unknown command "upstreams ${verb}"`,
  );
}

interface LabelRow {
  label: string;
  mount: string;
  servedHead: number | null;
  upstreams: {
    name: string;
    tier: string;
    state: string;
    head: number | null;
    lagBlocks: number;
    latencyMs: { p50: number | null; p95: number | null };
    errorRate: number;
    inFlight: number;
    held?: number;
    lastError: string | null;
  }[];
}

function where(row: LabelRow): string {
  return row.mount === "*" ? row.label : `${row.label}${row.mount}`;
}

function line(row: LabelRow, u: LabelRow["upstreams"][number]): string {
  const latency = `p50 ${u.latencyMs.p50 ?? "-"} ms, p95 ${u.latencyMs.p95 ?? "-"} ms`;
  const error = u.lastError === null ? "" : `  last error: ${u.lastError}`;
  return `${where(row)}  ${u.name}  ${u.state}${u.tier === "fallback" ? " (fallback)" : ""}  head ${u.head ?? "-"}  lag ${u.lagBlocks}  ${latency}  errors ${(u.errorRate * 100).toFixed(0)}%  in flight ${u.inFlight}${u.held ? `  held ${u.held}` : ""}${error}`;
}

async function call(given: string, body?: unknown): Promise<unknown> {
  // fetch refuses a URL that holds credentials: a --proxy URL's user and password (a front that asks for
  // them, such as nginx's auth_basic) go as the Basic authorization they stand for (RFC 7617), and the
  // URL asked, written in every message, holds none
  const { url, authorization } = withoutUserinfo(given);
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  let response: Response;
  try {
    response = await fetch(
      url,
      body === undefined
        ? { headers }
        : {
            method: "POST",
            headers: { ...headers, "content-type": "application/json" },
            body: JSON.stringify(body),
          },
    );
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new GatewayError("OPERATOR_UNREACHABLE", {
      url,
      reason: cause,
      hint: "start the proxy, or name its operator API with --proxy http://<host>:<port> (else the config's operator.listen)",
    });
  }
  const text = await response.text();
  let answer: { error?: { code: string; message: string } & Record<string, unknown> };
  try {
    answer = JSON.parse(text) as typeof answer;
  } catch {
    // something answered, but not as the operator API does (its every answer is JSON): say what it was
    const type = response.headers.get("content-type") ?? "no content type";
    throw new GatewayError("OPERATOR_UNREACHABLE", {
      url,
      reason: `answered ${response.status} with ${type}, not the operator API's JSON; is --proxy the operator address?`,
    });
  }
  if (!response.ok) {
    // the operator API's own error, as it said it; another's (the public port's UNKNOWN_NETWORK) says the
    // address is not the operator API's
    const { code, status: _status, message: _message, ...detail } = answer.error ?? { code: "", message: "" };
    if (OPERATOR_CODES.has(code)) throw new GatewayError(code as ErrorCode, detail);
    throw new GatewayError("OPERATOR_UNREACHABLE", {
      url,
      reason: `answered ${response.status}${code === "" ? "" : ` (${code})`}, not the operator API; is --proxy the operator address?`,
    });
  }
  return answer;
}

/** The codes the operator API answers with (proxy/operator.ts). */
const OPERATOR_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  "UPSTREAM_NOT_FOUND",
  "OPERATOR_ROUTE_NOT_FOUND",
  "INVALID_FIELD",
  "PARSE_ERROR",
  "UNSUPPORTED_MEDIA_TYPE",
  "HTTP_METHOD_NOT_ALLOWED",
  "INTERNAL",
]);

/** `url` without its user and password, and the Basic authorization they stand for, if any. */
function withoutUserinfo(url: string): { url: string; authorization?: string } {
  // one fetch cannot read either: its message names it, without what looks like a user and password
  if (!URL.canParse(url)) return { url: url.replace(/\/\/[^/@]*@/, "//") };
  const parsed = new URL(url);
  const { username, password } = parsed;
  if (username === "" && password === "") return { url };
  parsed.username = "";
  parsed.password = "";
  const plain = (part: string) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  };
  const pair = `${plain(username)}:${plain(password)}`;
  return { url: parsed.href, authorization: `Basic ${Buffer.from(pair).toString("base64")}` };
}
