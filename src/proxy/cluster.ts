import cluster, { type Worker } from "node:cluster";
import { setTimeout as delay } from "node:timers/promises";
import { withRestartOnlyOf } from "../config/restart-only.js";
import type { GatewayConfig, UpstreamSpec } from "../config/types.js";
import { upstreamName } from "../config/upstream-name.js";
import type { Logger } from "../log.js";
import { ClusterMetrics } from "../metrics/cluster-metrics.js";
import { ClusterConnections } from "./cluster-connections.js";
import { ClusterStore } from "./cluster-store.js";
import { closeServer, listenOperator } from "./listeners.js";
import { type CordonRequest, createOperatorApi, type OperatorView, type ProcessReport } from "./operator.js";
import type { RunningProxy } from "./run.js";
import {
  ask,
  type ConfigMessage,
  type ConfigRequest,
  type Question,
  type StartFailedMessage,
} from "./worker-link.js";

/** How long the operator API waits for each worker's answer before it reports the worker as silent. */
const WORKER_ANSWER_MS = 1_000;

/**
 * A worker that exits is started again after this long, doubled for each exit within the last minute
 * (a worker that crashes at once must not fork in a tight loop), up to RESPAWN_MAX_MS.
 */
const RESPAWN_FIRST_MS = 100;
const RESPAWN_MAX_MS = 30_000;

/**
 * How long past `limits.drainTimeoutMs` a worker told to stop may take to exit (its usage flush and its
 * goodbyes to the store and Redis, each bounded by 10 s) before it is killed: a worker that is stopped or
 * stuck never takes its SIGTERM, and would hold the stop, and the shared listener, for ever.
 */
const STOP_GRACE_MS = 15_000;

/**
 * The proxy as `config.workers` node:cluster workers sharing the listening socket, and their primary:
 * it forks them, starts again one that exits (after a backoff, its exit code or signal logged and counted
 * in gateway_worker_restarts_total), sends each a reload, and answers the operator API by asking them,
 * each question with a deadline: a worker that does not answer in time is reported as silent, and the
 * others' answers are served. The operator API listens first; this resolves once every worker listens.
 */
export async function runCluster(config: GatewayConfig, logger: Logger): Promise<RunningProxy> {
  const primary = new Primary(config, logger);
  const operator = config.operator && createOperatorApi(primary.view(), logger);
  const operatorPort = await listenOperator(operator, config);
  try {
    const port = await primary.start();
    return {
      port,
      operatorPort,
      accountKeys: undefined,
      // the workers are sent what they serve: the settings that take a restart as the processes run them
      reload: (next) => primary.reload(withRestartOnlyOf(config, next)),
      close: async () => {
        await primary.stop(primary.serving.limits.shutdownDelayMs);
        await closeServer(operator);
      },
    };
  } catch (error) {
    await primary.stop(0);
    await closeServer(operator);
    throw error;
  }
}

class Primary {
  readonly #config: GatewayConfig;
  readonly #logger: Logger;
  readonly #metrics: ClusterMetrics;
  /** The config a reload sent the workers; a worker started after a reload is sent it too. */
  #reloaded: GatewayConfig | undefined;

  /** The config the workers serve: the last reloaded, else the one they started with. */
  get serving(): GatewayConfig {
    return this.#reloaded ?? this.#config;
  }
  /** The config each worker was handed as it started (configFromPrimary). */
  readonly #handed = new WeakMap<Worker, GatewayConfig>();
  /** The operator's cordons by label and upstream, for a worker started after them. */
  readonly #cordons = new Map<string, CordonRequest>();
  /** The workers that listen: one forked and not yet listening is starting, not silent. */
  readonly #listening = new WeakSet<Worker>();
  /** When workers exited, within the last minute: how long the next one waits to be started. */
  #exits: number[] = [];
  #stopping = false;
  /** When the stop began (Date.now()), which a worker counts the shutdown delay from. */
  #stoppingSince = 0;
  /** What the workers share through the primary without Redis: heads and filters (cluster-shares.ts). */
  readonly #store: ClusterStore | undefined;
  /** Every worker's open WebSocket connections, against the caps per key and per IP (with Redis too). */
  readonly #connections = new ClusterConnections();

  constructor(config: GatewayConfig, logger: Logger) {
    this.#config = config;
    this.#logger = logger;
    // with Redis, the workers share heads and filters through it, as instances do
    this.#store = config.sharedLimits === undefined ? new ClusterStore(() => this.#workers()) : undefined;
    this.#metrics = new ClusterMetrics(config.workers, () => this.#workers().length);
  }

  /** Forks the workers; resolves with the port once every one listens, rejects if one exits before. */
  start(): Promise<number> {
    return new Promise((resolve, reject) => {
      let listening = 0;
      let started = false;
      cluster.on("listening", (worker, address) => {
        this.#listening.add(worker);
        this.#store?.seed(worker);
        // A worker still starting when the stop began had no ear for its news (a message before its
        // listener is lost): told now, it counts the delay from the stop, not again from the primary's
        // SIGTERM, which would keep the shared listener open twice the delay.
        if (this.#stopping) this.#tellStopping(worker);
        if (started) {
          // a worker started in place of one that exited serves what its peers serve: the config it was
          // handed, or the reload that came while it started (which it could not hear yet), then the
          // operator's cordons, in the order given (IPC keeps it)
          if (this.#handed.get(worker) !== this.serving)
            send(worker, { type: "gateway:reload", config: this.serving });
          for (const request of this.#cordons.values())
            void ask<"gateway:cordon">(worker, { type: "gateway:cordon", ...request }, WORKER_ANSWER_MS);
          return;
        }
        listening += 1;
        if (listening < this.#config.workers) return;
        started = true;
        resolve(address.port);
      });
      // a worker that could not start says why (lifecycle.ts): the first reason is the primary's one line
      cluster.on("message", (worker, message: Partial<StartFailedMessage | ConfigRequest> | undefined) => {
        if (this.#connections.take(worker, message) || this.#store?.take(worker, message)) return;
        if (message?.type === "gateway:config-request") {
          this.#handed.set(worker, this.serving);
          send(worker, { type: "gateway:config", config: this.serving } satisfies ConfigMessage);
          return;
        }
        if (!started && message?.type === "gateway:start-failed") reject(new Error(message.reason));
      });
      cluster.on("exit", (worker, code, signal) => {
        void this.#metrics.gone(worker.id);
        this.#connections.gone(worker);
        if (this.#stopping) return;
        const how = signal === null ? { code } : { signal };
        if (!started) {
          reject(new Error(`worker ${worker.id} exited during start (${signal ?? `code ${code}`})`));
          return;
        }
        this.#logger.log("error", "worker exited", { worker: worker.id, pid: worker.process.pid, ...how });
        this.#respawn();
      });
      for (let i = 0; i < this.#config.workers; i++) this.#fork();
    });
  }

  reload(config: GatewayConfig): void {
    this.#reloaded = config;
    // a cordon goes with its node's place in the deployment: the workers carry it only to a config that
    // still names the node (served-config.ts), so one that names it again later serves it uncordoned, and
    // so must a worker started after that
    for (const [key, request] of this.#cordons)
      if (!namesUpstream(config, request)) this.#cordons.delete(key);
    for (const worker of this.#workers()) send(worker, { type: "gateway:reload", config });
  }

  /** Not ready first, while the operator API still answers; then every worker drains and exits. */
  async stop(shutdownDelayMs: number): Promise<void> {
    this.#stopping = true;
    this.#stoppingSince = Date.now();
    for (const worker of this.#workers()) this.#tellStopping(worker);
    await delay(shutdownDelayMs);
    const exitWithinMs = this.serving.limits.drainTimeoutMs + STOP_GRACE_MS;
    await Promise.all(
      Object.values(cluster.workers ?? {}).map(
        (worker) =>
          new Promise<void>((resolve) => {
            if (worker === undefined || worker.isDead()) return resolve();
            const { pid } = worker.process;
            const kill = setTimeout(() => {
              this.#logger.log("error", "worker did not stop: killed", {
                worker: worker.id,
                pid,
                exitWithinMs,
              });
              worker.process.kill("SIGKILL");
            }, exitWithinMs);
            worker.once("exit", () => {
              clearTimeout(kill);
              resolve();
            });
            worker.kill("SIGTERM");
          }),
      ),
    );
  }

  /**
   * The primary's view for the operator API: each worker's upstreams (a silent one as such), series
   * summed, and readiness: ready when every configured worker runs and answers ready.
   */
  view(): OperatorView {
    return {
      report: async () => {
        const workers = this.#workers();
        const reports = await this.#askAll<"gateway:upstreams">(workers, { type: "gateway:upstreams" });
        return workers.map(
          (worker, i): ProcessReport => reports[i] ?? silent(worker, this.#listening.has(worker)),
        );
      },
      cordon: async (request) => {
        const counts = await this.#askAll<"gateway:cordon">(this.#workers(), {
          type: "gateway:cordon",
          ...request,
        });
        const matched = counts.reduce<number>((sum, n) => sum + (n ?? 0), 0);
        const key = `${request.label}\n${request.upstream}`;
        if (!request.cordoned) this.#cordons.delete(key);
        else if (matched > 0) this.#cordons.set(key, request);
        return matched;
      },
      metrics: async () => {
        const workers = this.#workers();
        const answers = await this.#askAll<"gateway:metrics">(workers, { type: "gateway:metrics" });
        return this.#metrics.scrape(new Map(workers.map((worker, i) => [worker.id, answers[i]])));
      },
      ready: async () => {
        const workers = this.#workers();
        const reports = await this.#askAll<"gateway:ready">(workers, { type: "gateway:ready" });
        const reasons = new Set<string>();
        if (this.#stopping) reasons.add("shutting down");
        if (workers.length < this.#config.workers)
          reasons.add(`${workers.length} of ${this.#config.workers} workers running`);
        reports.forEach((report, i) => {
          const worker = workers[i] as Worker;
          if (report === undefined) reasons.add(silentReason(worker, this.#listening.has(worker)));
          else for (const reason of report.reasons) reasons.add(reason);
        });
        return { ready: reasons.size === 0, reasons: [...reasons] };
      },
    };
  }

  #askAll<Type extends Question["type"]>(
    workers: readonly Worker[],
    question: Omit<Extract<Question, { type: Type }>, "id">,
  ) {
    return Promise.all(workers.map((worker) => ask<Type>(worker, question, WORKER_ANSWER_MS)));
  }

  #workers(): Worker[] {
    return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
  }

  #tellStopping(worker: Worker): void {
    send(worker, { type: "gateway:stopping", since: this.#stoppingSince });
  }

  #fork(): void {
    // its config it asks for once it runs (configFromPrimary): what the workers serve, with the upstreams
    // only the primary knows (the demo's local nodes)
    const worker = cluster.fork();
    // A failed send to a worker whose channel closed is an event: unheard, it would end the primary.
    worker.on("error", (error: Error) =>
      this.#logger.log("warn", "worker channel", { worker: worker.id, error: error.message }),
    );
  }

  #respawn(): void {
    const now = Date.now();
    this.#exits = [...this.#exits.filter((at) => now - at < 60_000), now];
    const wait = Math.min(RESPAWN_MAX_MS, RESPAWN_FIRST_MS * 2 ** (this.#exits.length - 1));
    this.#logger.log("warn", "worker restarting", { inMs: wait, exitsInLastMinute: this.#exits.length });
    setTimeout(() => {
      if (this.#stopping) return;
      this.#metrics.restarted();
      this.#fork();
    }, wait).unref();
  }
}

/** Whether `config` has an upstream of the cordon's name on its label, on any of the label's mounts. */
function namesUpstream(config: GatewayConfig, { label, upstream }: CordonRequest): boolean {
  const lists = config.upstreams[label];
  if (lists === undefined) return false;
  const specs: readonly (string | UpstreamSpec)[] = Array.isArray(lists)
    ? lists
    : Object.values(lists as Readonly<Record<string, readonly (string | UpstreamSpec)[]>>).flat();
  return specs.some((spec) => upstreamName(spec) === upstream);
}

function send(worker: Worker, message: unknown): void {
  if (!worker.isDead() && worker.isConnected()) worker.send(message as never, () => {});
}

/**
 * Why a worker gave no answer: one that does not listen yet is starting (forked at the start, or in place
 * of one that exited) and reads no question until it has its config; one that listens did not answer.
 */
export function silentReason(worker: Pick<Worker, "id" | "process">, listening: boolean): string {
  const name = `worker ${worker.id} (pid ${worker.process.pid})`;
  return listening ? `${name} did not answer within ${WORKER_ANSWER_MS} ms` : `${name} is starting`;
}

function silent(worker: Worker, listening: boolean): ProcessReport {
  return { pid: worker.process.pid ?? 0, labels: [], silent: silentReason(worker, listening) };
}
