import type { Worker } from "node:cluster";
import type { MetricObjectWithValues, MetricValue } from "prom-client";
import type { GatewayConfig } from "../config/types.js";
import { isShareMessage } from "./cluster-shares.js";
import type { CordonRequest, ProcessReport } from "./operator.js";
import type { ReadyReport } from "./readiness.js";

// The messages between a cluster's primary (cluster.ts) and its workers, over node:cluster's IPC channel.

/** A worker's metric series, as prom-client's registry gives them (getMetricsAsJSON). */
export type WorkerMetrics = MetricObjectWithValues<MetricValue<string>>[];

/** What the primary asks each worker; the worker answers with the same id. */
export type Question =
  | { readonly type: "gateway:upstreams"; readonly id: number }
  | { readonly type: "gateway:ready"; readonly id: number }
  | { readonly type: "gateway:metrics"; readonly id: number }
  | ({ readonly type: "gateway:cordon"; readonly id: number } & CordonRequest);

/** What each question's answer holds. */
export interface Answers {
  readonly "gateway:upstreams": ProcessReport;
  readonly "gateway:ready": ReadyReport;
  readonly "gateway:metrics": WorkerMetrics;
  readonly "gateway:cordon": number;
}

/** A worker could not start: its reason, which the primary reports once for every worker. */
export interface StartFailedMessage {
  readonly type: "gateway:start-failed";
  readonly reason: string;
}

/** A worker starting asks its primary for the config it is to serve (configFromPrimary). */
export interface ConfigRequest {
  readonly type: "gateway:config-request";
}

/** The primary's answer: the config its workers serve, the last reloaded one if any. */
export interface ConfigMessage {
  readonly type: "gateway:config";
  readonly config: GatewayConfig;
}

/**
 * In a worker: the config its primary serves, asked for over IPC. A worker never reads the config file
 * itself: after a reload the primary refused, the file is not what serves (a worker started again would
 * meet its mistake and exit), and after an edit of a setting that takes a restart, not what the process
 * runs with either.
 */
export function configFromPrimary(): Promise<GatewayConfig> {
  return new Promise((resolve) => {
    const listener = (message: Partial<ConfigMessage> | undefined) => {
      if (message?.type !== "gateway:config" || message.config === undefined) return;
      process.off("message", listener);
      resolve(message.config);
    };
    process.on("message", listener);
    const request: ConfigRequest = { type: "gateway:config-request" };
    process.send?.(request, undefined, {}, () => {});
  });
}

/** The primary tells a worker to serve a new config (SIGHUP). */
export interface ReloadMessage {
  readonly type: "gateway:reload";
  readonly config: GatewayConfig;
}

/** The primary tells a worker that a stop has begun: its answers close their connections from now on. */
export interface StoppingMessage {
  readonly type: "gateway:stopping";
  /** When the stop began (Date.now() in the primary): the shutdown delay counts from then. */
  readonly since: number;
}

/** What a worker does with each question, and with a reload. */
export interface WorkerSide {
  readonly upstreams: () => ProcessReport;
  readonly ready: () => ReadyReport;
  readonly metrics: () => Promise<WorkerMetrics>;
  readonly cordon: (request: CordonRequest) => number;
  readonly reload: (config: GatewayConfig) => void;
  readonly stopping: (since: number) => void;
}

/** A worker answers its primary's questions, and takes its reloads and the news of a stop. */
export function answerPrimary(side: WorkerSide): void {
  process.on("message", (message: Question | ReloadMessage | StoppingMessage) => {
    // the heads and filters the workers share are cluster-shares.ts's, not questions
    if (isShareMessage(message)) return;
    if (message?.type === "gateway:reload") {
      side.reload(message.config);
      return;
    }
    if (message?.type === "gateway:stopping") {
      side.stopping(message.since);
      return;
    }
    void answer(side, message).then(
      (value) => reply({ id: message.id, value }),
      (error: unknown) => reply({ id: message?.id, error: String(error) }),
    );
  });
}

async function answer(side: WorkerSide, question: Question): Promise<unknown> {
  switch (question?.type) {
    case "gateway:upstreams":
      return side.upstreams();
    case "gateway:ready":
      return side.ready();
    case "gateway:metrics":
      return side.metrics();
    case "gateway:cordon":
      return side.cordon(question);
    default:
      throw new Error(`an unknown question: ${JSON.stringify(question)?.slice(0, 80)}`);
  }
}

/** A reply that cannot go (the primary is gone) is dropped: the worker's own exit follows. */
function reply(message: unknown): void {
  if (process.connected) process.send?.(message, undefined, {}, () => {});
}

let nextQuestion = 0;

/** A worker's reply to one of the primary's questions. */
interface Reply {
  readonly id?: number;
  readonly value?: unknown;
  readonly error?: string;
}

/**
 * The questions waiting for their answer, by id, and the workers whose channel has a reader for them: one
 * listener per worker, not one per question, which past 10 at once (a scrape and a few readiness checks
 * while a worker is silent) had Node warn of a leak on stderr, outside the JSON log.
 */
const waiting = new Map<number, (reply: Reply) => void>();
const read = new WeakSet<Worker>();

function readReplies(worker: Worker): void {
  if (read.has(worker)) return;
  read.add(worker);
  worker.on("message", (reply: Reply | undefined) => {
    if (typeof reply?.id === "number") waiting.get(reply.id)?.(reply);
  });
}

/**
 * One question to one worker, answered within `timeoutMs` or not at all (undefined): a stopped, dying or
 * dead worker must not hold up the operator API, and a message to a worker whose channel just closed must
 * not throw (ERR_IPC_CHANNEL_CLOSED) in the primary.
 */
export function ask<Type extends Question["type"]>(
  worker: Worker,
  question: Omit<Extract<Question, { type: Type }>, "id">,
  timeoutMs: number,
): Promise<Answers[Type] | undefined> {
  return new Promise((resolve) => {
    const id = ++nextQuestion;
    const done = (value: Answers[Type] | undefined) => {
      clearTimeout(timer);
      waiting.delete(id);
      resolve(value);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    if (worker.isDead() || !worker.isConnected()) {
      done(undefined);
      return;
    }
    readReplies(worker);
    waiting.set(id, (reply) => done(reply.error === undefined ? (reply.value as Answers[Type]) : undefined));
    worker.send({ ...question, id }, (error: Error | null) => {
      if (error !== null) done(undefined);
    });
  });
}
