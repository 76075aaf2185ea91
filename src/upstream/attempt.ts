import type { IncomingHttpHeaders } from "node:http";
import type { Span } from "@opentelemetry/api";
import type { Dispatcher } from "undici";
import { GatewayError } from "../errors/table.js";
import { type CallerSide, clientGone } from "../http/client-gone.js";
import type { Upstream } from "./upstreams.js";

// How an attempt whose answer the call did not take ends; the call no longer listens to it.
const NOT_TAKEN = new Error("answer not taken");

/** What an attempt tells the call it belongs to (call-run.ts). */
export interface AttemptGate {
  /**
   * Whether an answer only its body can judge (a dialect's own errors at a 5xx: registry `errorStatus`; a
   * node saying at 200 that it cannot serve): the attempt reads such an answer whole before asking
   * `answeredWhole`.
   */
  holds(statusCode: number, headers: IncomingHttpHeaders): boolean;
  /** The attempt's answer began with this status: whether it is the answer the client gets. */
  answered(attempt: AttemptHandler, statusCode: number): boolean;
  /** The attempt's whole answer that it `holds`: whether it is the answer the client gets. */
  answeredWhole(attempt: AttemptHandler, statusCode: number, body: Buffer): boolean;
  /** The attempt is over: with nothing when its answer went out whole. */
  ended(attempt: AttemptHandler, error?: Error): void;
}

/**
 * One attempt of a call on one upstream, as an undici dispatch handler (undici 7's handler interface).
 * The call decides, when the answer's status arrives, whether this attempt's answer is the one the
 * client gets; a subclass then takes the answer (response-relay.ts streams it, buffered-answer.ts
 * reads it whole). The client's leaving aborts every attempt of its call.
 */
export abstract class AttemptHandler<Caller extends CallerSide = CallerSide>
  implements Dispatcher.DispatchHandler
{
  readonly upstream: Upstream;
  readonly startedAt = performance.now();
  /** The attempt's span, when its request is traced (src/tracing/); its call ends it. */
  span: Span | undefined = undefined;
  protected readonly res: Caller;
  protected readonly gate: AttemptGate;
  protected controller: Dispatcher.DispatchController | undefined = undefined;
  #pendingAbort: Error | undefined = undefined;
  #over = false;
  /** An answer the gate `holds`, read whole before the gate judges it. */
  #held: { statusCode: number; headers: IncomingHttpHeaders; chunks: Buffer[] } | undefined = undefined;

  constructor(upstream: Upstream, res: Caller, gate: AttemptGate) {
    this.upstream = upstream;
    this.res = res;
    this.gate = gate;
  }

  /**
   * Whether undici took the request to a connection: one queued behind its pool's busy connections has not
   * left the gateway, so a write that never got one has reached no node.
   */
  get started(): boolean {
    return this.controller !== undefined;
  }

  /** Ends the attempt with `reason`: now if it has started, else as soon as it does. */
  abort(reason: Error): void {
    if (this.controller === undefined) this.#pendingAbort = reason;
    else this.controller.abort(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // A request queued behind busy connections reaches here after its call may have moved on.
    if (this.#pendingAbort !== undefined) controller.abort(this.#pendingAbort);
    else if (clientGone(this.res)) controller.abort(new GatewayError("CLIENT_CLOSED"));
    else this.res.on("close", this.#clientGone);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (this.gate.holds(statusCode, headers)) {
      this.#held = { statusCode, headers, chunks: [] };
      return;
    }
    if (!this.gate.answered(this, statusCode)) {
      controller.abort(NOT_TAKEN);
      return;
    }
    this.taken(controller, statusCode, headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#held === undefined) this.data(controller, chunk);
    else this.#held.chunks.push(chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController): void {
    const held = this.#held;
    if (held === undefined) {
      this.bodyEnd();
      return;
    }
    this.#held = undefined;
    const body = Buffer.concat(held.chunks);
    if (!this.gate.answeredWhole(this, held.statusCode, body)) {
      // another node gets the call, or it ends with this failure: the gate has it, and no longer waits
      this.end();
      return;
    }
    this.taken(controller, held.statusCode, held.headers);
    this.data(controller, body);
    this.bodyEnd();
  }

  /** This attempt's answer is the client's: its status and headers. */
  protected abstract taken(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void;

  /** A chunk of the answer the call took. */
  protected abstract data(controller: Dispatcher.DispatchController, chunk: Buffer): void;

  /** The answer the call took ended. */
  protected bodyEnd(): void {
    this.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.end(error);
  }

  /** Whether the attempt has been reported over. */
  protected get over(): boolean {
    return this.#over;
  }

  /** Reports the attempt over, once. */
  protected end(error?: Error): void {
    if (this.#over) return;
    this.#over = true;
    this.gate.ended(this, error);
  }

  // A flag rather than off() once over: a ServerResponse's event table is not kept in shape, so removing
  // a listener turns it into a dictionary; the response is dropped right after anyway.
  readonly #clientGone = (): void => {
    if (!this.#over && clientGone(this.res)) this.controller?.abort(new GatewayError("CLIENT_CLOSED"));
  };
}
