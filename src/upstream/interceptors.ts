import type { Dispatcher } from "undici";
import WrapHandler from "undici/lib/handler/wrap-handler.js";
import { GatewayError } from "../errors/table.js";

/** A dispatch function, and an interceptor wrapping one in another: undici's shape (Dispatcher.compose). */
export type Dispatch = (options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => boolean;
export type Interceptor = (dispatch: Dispatch) => Dispatch;

/** Dispatch options with the gateway's own: the most body bytes the call takes from an answer. */
export interface CappedOptions extends Dispatcher.DispatchOptions {
  readonly maxResponseBytes?: number;
}

/**
 * `dispatcher.dispatch` through `interceptors`, the first one outermost, as undici's `compose` does;
 * without the Proxy that `compose` returns, which every dispatch would go through.
 */
export function intercepted(dispatcher: Dispatcher, ...interceptors: readonly Interceptor[]): Dispatch {
  let dispatch: Dispatch = (options, handler) => dispatcher.dispatch(options, handler);
  for (const interceptor of [...interceptors].reverse()) dispatch = interceptor(dispatch);
  return dispatch;
}

/**
 * Caps an answer's body at the call's `maxResponseBytes`: a declared length over it is refused when the
 * answer starts, an undeclared one counted as it comes (undici's parser holds a declared one to its
 * length). Past the cap the upstream request is aborted with UPSTREAM_RESPONSE_TOO_LARGE, which the
 * handler gets as its error. Every upstream call goes through it: the relay, a whole answer, the prober.
 */
export const responseCap: Interceptor = (dispatch) => (options, handler) => {
  const max = (options as CappedOptions).maxResponseBytes;
  if (max === undefined || max === Number.POSITIVE_INFINITY) return dispatch(options, handler);
  // A handler of undici's older shape (its request API's) is given the current one first, as compose does.
  return dispatch(options, new CappedAnswer(WrapHandler.wrap(handler), max));
};

class CappedAnswer implements Dispatcher.DispatchHandler {
  readonly #inner: Dispatcher.DispatchHandler;
  readonly #max: number;
  #counting = false;
  #seen = 0;

  constructor(inner: Dispatcher.DispatchHandler, max: number) {
    this.#inner = inner;
    this.#max = max;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.#inner.onRequestStart?.(controller, context);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    const declared = headers["content-length"];
    if (declared !== undefined && Number(declared) > this.#max) {
      controller.abort(this.#tooLarge());
      return;
    }
    this.#counting = declared === undefined;
    this.#inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#counting) {
      this.#seen += chunk.length;
      if (this.#seen > this.#max) {
        controller.abort(this.#tooLarge());
        return;
      }
    }
    this.#inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(
    controller: Dispatcher.DispatchController,
    trailers: Record<string, string | string[] | undefined>,
  ): void {
    this.#inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.#inner.onResponseError?.(controller, error);
  }

  #tooLarge(): GatewayError {
    return new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes: this.#max });
  }
}

/**
 * A handler that tells `started` when undici takes its request to a connection (before that, the request
 * has left nothing: one queued behind its pool's busy connections reached no node), and passes the rest on.
 */
export class StartNoted implements Dispatcher.DispatchHandler {
  readonly #inner: Dispatcher.DispatchHandler;
  readonly #started: () => void;

  constructor(inner: Dispatcher.DispatchHandler, started: () => void) {
    // a handler of undici's older shape (its request API's) is given the current one first, as compose does
    this.#inner = WrapHandler.wrap(inner);
    this.#started = started;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.#started();
    this.#inner.onRequestStart?.(controller, context);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    this.#inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(
    controller: Dispatcher.DispatchController,
    trailers: Record<string, string | string[] | undefined>,
  ): void {
    this.#inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.#inner.onResponseError?.(controller, error);
  }
}
