import type { ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { type AttemptGate, AttemptHandler } from "./attempt.js";
import type { Upstream } from "./upstreams.js";

/** A whole upstream answer, read for the gateway to change before it goes out (a partial batch's merge). */
export interface WholeAnswer {
  readonly statusCode: number;
  readonly body: Buffer;
}

/** An attempt that reads its answer whole once its call takes it; the upstream's interceptor caps its size. */
export class BufferedAnswer extends AttemptHandler {
  readonly #chunks: Buffer[] = [];
  #statusCode = 0;

  constructor(upstream: Upstream, res: ServerResponse, gate: AttemptGate) {
    super(upstream, res, gate);
  }

  /** The answer, once the attempt ended without an error. */
  get answer(): WholeAnswer {
    return { statusCode: this.#statusCode, body: Buffer.concat(this.#chunks) };
  }

  protected taken(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#statusCode = statusCode;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#chunks.push(chunk);
  }
}
