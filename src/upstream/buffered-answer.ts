import type { ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { GatewayError } from "../errors/table.js";
import { clientGone } from "../http/client-gone.js";

/** A whole upstream answer, read for the gateway to change before it goes out (a partial batch's merge). */
export interface WholeAnswer {
  readonly statusCode: number;
  readonly body: Buffer;
}

/**
 * An undici dispatch handler that reads the upstream's whole answer, up to `maxBytes`, and calls back
 * once. The client's leaving aborts it, as it does the streaming relay.
 */
export class BufferedAnswer implements Dispatcher.DispatchHandler {
  readonly #res: ServerResponse;
  readonly #maxBytes: number;
  readonly #callback: (error: Error | undefined, answer?: WholeAnswer) => void;
  readonly #chunks: Buffer[] = [];
  #seen = 0;
  #statusCode = 0;
  #controller: Dispatcher.DispatchController | undefined;
  #done = false;

  constructor(
    res: ServerResponse,
    maxBytes: number,
    callback: (error: Error | undefined, answer?: WholeAnswer) => void,
  ) {
    this.#res = res;
    this.#maxBytes = maxBytes;
    this.#callback = callback;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (clientGone(this.#res)) controller.abort(new GatewayError("CLIENT_CLOSED"));
    else this.#res.on("close", this.#clientGone);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
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

  onResponseEnd(): void {
    this.#done = true;
    this.#callback(undefined, { statusCode: this.#statusCode, body: Buffer.concat(this.#chunks) });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#done = true;
    this.#callback(error);
  }

  readonly #clientGone = (): void => {
    if (!this.#done && clientGone(this.#res)) this.#controller?.abort(new GatewayError("CLIENT_CLOSED"));
  };
}
