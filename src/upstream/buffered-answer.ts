import type { ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { GatewayError } from "../errors/table.js";
import { type AttemptGate, AttemptHandler } from "./attempt.js";
import type { Upstream } from "./upstreams.js";

/** A whole upstream answer, read for the gateway to change before it goes out (a partial batch's merge). */
export interface WholeAnswer {
  readonly statusCode: number;
  readonly body: Buffer;
}

/** An attempt that reads its answer whole, up to `maxBytes`, once its call takes it. */
export class BufferedAnswer extends AttemptHandler {
  readonly #maxBytes: number;
  readonly #chunks: Buffer[] = [];
  #seen = 0;
  #statusCode = 0;

  constructor(upstream: Upstream, res: ServerResponse, gate: AttemptGate, maxBytes: number) {
    super(upstream, res, gate);
    this.#maxBytes = maxBytes;
  }

  /** The answer, once the attempt ended without an error. */
  get answer(): WholeAnswer {
    return { statusCode: this.#statusCode, body: Buffer.concat(this.#chunks) };
  }

  protected taken(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#statusCode = statusCode;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#seen += chunk.length;
    if (this.#seen > this.#maxBytes) {
      controller.abort(new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes: this.#maxBytes }));
      return;
    }
    this.#chunks.push(chunk);
  }
}
