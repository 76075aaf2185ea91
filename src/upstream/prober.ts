import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";
import type { HealthConfig } from "../config/types.js";
import type { Endpoint, HeadCall, Mount } from "../registry/types.js";
import { type HeadProbe, headProbe, readHead } from "./head.js";
import {
  healthFor,
  type Upstream,
  type UpstreamGroup,
  type UpstreamTable,
  upstreamPath,
} from "./upstreams.js";

interface ProbeTarget {
  readonly group: UpstreamGroup;
  readonly probe: HeadProbe;
  readonly intervalMs: number;
  readonly timeoutMs: number;
}

/**
 * Probes every upstream with its interface's registry head call, each on its own timer: every
 * `probeIntervalMs` (per label) with ±20% jitter, so a label's probes do not line up, and with its own
 * short timeout (`probeTimeoutMs`). A good probe records the head and its latency, and the group then
 * settles each member's lag against the best head; a failed probe takes the node out of rotation. This is
 * the only way back into rotation for a failing node: callers' requests never go to one.
 */
export class Prober {
  readonly #targets: ProbeTarget[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  #stopped = false;

  constructor(table: UpstreamTable, endpoints: ReadonlyMap<string, Endpoint>, health: HealthConfig) {
    for (const group of table.groups()) {
      const settings = healthFor(health, group.label);
      const endpoint = endpoints.get(group.label);
      const probe = endpoint === undefined ? undefined : probeFor(endpoint, group.mount);
      if (probe === undefined || settings.probeIntervalMs <= 0) continue;
      this.#targets.push({
        group,
        probe,
        intervalMs: settings.probeIntervalMs,
        timeoutMs: settings.probeTimeoutMs,
      });
    }
  }

  /** Probes every upstream once now, then on its timer. */
  start(): void {
    for (const target of this.#targets)
      for (const member of target.group.members) this.#probe(target, member);
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #schedule(target: ProbeTarget, member: Upstream): void {
    if (this.#stopped) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(timer);
        this.#probe(target, member);
      },
      target.intervalMs * (0.8 + 0.4 * Math.random()),
    );
    timer.unref();
    this.#timers.add(timer);
  }

  #probe(target: ProbeTarget, member: Upstream): void {
    const { group, probe, timeoutMs } = target;
    const started = performance.now();
    const handler = new ProbeAnswer((error, statusCode, body) => {
      clearTimeout(deadline);
      if (this.#stopped) return;
      try {
        if (error !== undefined) throw error;
        if (statusCode < 200 || statusCode >= 300) throw new Error(`HTTP ${statusCode}`);
        member.health.probed(readHead(probe.call, body), performance.now() - started);
        group.judgeProbe(member);
      } catch (failure) {
        member.health.probeFailed(describe(failure));
      }
      this.#schedule(target, member);
    });
    // The probe's own bound, over connecting too (the pool's connect timeout may be longer).
    const deadline = setTimeout(
      () => handler.abort(new Error(`no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    deadline.unref();
    try {
      member.dispatcher.dispatch(
        {
          method: probe.method,
          path: upstreamPath(member, probe.path, ""),
          headers: member.hasHeaders ? { ...probe.headers, ...member.headers } : probe.headers,
          body: probe.body ?? null,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        handler,
      );
    } catch (error) {
      handler.fail(error as Error);
    }
  }
}

/**
 * The head call a group's upstreams are probed with: the mount's own (registry `head` of its interface),
 * or for an endpoint-wide list, the endpoint's head call on the mount that serves it.
 */
export function probeFor(endpoint: Endpoint, mountPath: string): HeadProbe | undefined {
  if (mountPath !== "*") {
    const mount = endpoint.mounts.find((m) => m.path === mountPath);
    const call = mount === undefined ? undefined : headOf(mount, endpoint);
    return mount === undefined || call === undefined ? undefined : headProbe(call, mount.path);
  }
  for (const mount of endpoint.mounts)
    if (serves(mount, endpoint.head)) return headProbe(endpoint.head, mount.path);
  return undefined;
}

function headOf(mount: Mount, endpoint: Endpoint): HeadCall | undefined {
  return mount.head ?? (serves(mount, endpoint.head) ? endpoint.head : undefined);
}

function serves(mount: Mount, call: HeadCall): boolean {
  if (call.kind === "jsonrpc") return mount.policy.jsonrpc?.methods.has(call.method) ?? false;
  return mount.policy.routes !== undefined;
}

/** Reads a probe's whole answer (a head call's is small) and calls back once. */
class ProbeAnswer implements Dispatcher.DispatchHandler {
  readonly #callback: (error: Error | undefined, statusCode: number, body: string) => void;
  readonly #chunks: Buffer[] = [];
  #statusCode = 0;
  #controller: Dispatcher.DispatchController | undefined = undefined;
  #pendingAbort: Error | undefined = undefined;
  #done = false;

  constructor(callback: (error: Error | undefined, statusCode: number, body: string) => void) {
    this.#callback = callback;
  }

  abort(reason: Error): void {
    if (this.#controller === undefined) this.#pendingAbort = reason;
    else this.#controller.abort(reason);
  }

  fail(error: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.#callback(error, 0, "");
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#pendingAbort !== undefined) controller.abort(this.#pendingAbort);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    _headers: IncomingHttpHeaders,
  ): void {
    this.#statusCode = statusCode;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#chunks.push(chunk);
    // A head call's answer is small; a node that streams megabytes back is not answering it.
    if (this.#chunks.length > 256) controller.abort(new Error("the head call's answer is too large"));
  }

  onResponseEnd(): void {
    if (this.#done) return;
    this.#done = true;
    this.#callback(undefined, this.#statusCode, Buffer.concat(this.#chunks).toString("utf8"));
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === "string" ? `${code} ${message}` : message;
}
