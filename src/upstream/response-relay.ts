import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { GatewayError } from "../errors/table.js";
import { clientGone } from "../http/client-gone.js";

/** Upstream response headers a client gets; everything else (cookies, server banners, hop-by-hop) stays behind. */
const PASSED_HEADERS = [
  "content-type",
  "content-length",
  "content-encoding",
  "cache-control",
  "etag",
  "last-modified",
  "retry-after",
] as const;

export interface RelayOptions {
  readonly res: ServerResponse;
  /** Past this many body bytes the upstream request is aborted; Infinity for streams. */
  readonly maxBytes: number;
  /** A stream: the client must see the status line before the first item, which may be minutes away. */
  readonly flushHeaders: boolean;
  /** Called once: with nothing when the answer went out whole, else with why not. */
  readonly settle: (error?: Error) => void;
}

/**
 * An undici dispatch handler (undici 7's handler interface) that writes the upstream's answer straight
 * into the client's response: status and passed headers, then each chunk as it arrives, pausing the
 * upstream socket while the client's socket is full. No Readable, promise or stream-finished listener
 * stands between the two sockets, as `stream()` would add per request.
 */
export class ResponseRelay implements Dispatcher.DispatchHandler {
  readonly #options: RelayOptions;
  #controller: Dispatcher.DispatchController | undefined;
  #waitingForDrain = false;
  #done = false;
  #counted = false;
  #seen = 0;
  /** Body bytes still to come under a declared length; -1 when none was declared. */
  #remaining = -1;
  #ended = false;

  constructor(options: RelayOptions) {
    this.#options = options;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    const { res } = this.#options;
    // A request queued behind busy connections reaches here after its client may have left.
    if (clientGone(res)) controller.abort(new GatewayError("CLIENT_CLOSED"));
    else res.on("close", this.#clientGone);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    raw: IncomingHttpHeaders,
  ): void {
    const { res, maxBytes, flushHeaders } = this.#options;
    // A flat [name, value, ...] list: writeHead takes it as is, with no object built per response.
    const headers: string[] = ["access-control-allow-origin", "*"];
    for (const name of PASSED_HEADERS) {
      const value = raw[name];
      if (value !== undefined) headers.push(name, String(value));
    }
    const declared = raw["content-length"] === undefined ? -1 : Number(raw["content-length"]);
    if (declared > maxBytes) {
      controller.abort(new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes }));
      return;
    }
    // A declared length is enforced by undici's parser; only an undeclared one needs counting.
    this.#counted = declared < 0 && maxBytes !== Number.POSITIVE_INFINITY;
    this.#remaining = declared;
    res.writeHead(statusCode, headers);
    if (flushHeaders) res.flushHeaders();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const { res, maxBytes } = this.#options;
    if (this.#counted) {
      this.#seen += chunk.length;
      if (this.#seen > maxBytes) {
        controller.abort(new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes }));
        return;
      }
    }
    if (chunk.length === this.#remaining) {
      // The last bytes of a declared length (most answers come in one chunk): writing them with end()
      // saves the response a second pass through its write path.
      this.#ended = true;
      res.end(chunk);
      return;
    }
    if (this.#remaining > 0) this.#remaining -= chunk.length;
    if (res.write(chunk)) return;
    // Paused until the client's socket drains; most answers never fill it.
    controller.pause();
    if (!this.#waitingForDrain) {
      this.#waitingForDrain = true;
      res.on("drain", () => {
        if (!this.#done) this.#controller?.resume();
      });
    }
  }

  onResponseEnd(): void {
    this.#done = true;
    if (!this.#ended) this.#options.res.end();
    this.#options.settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#done = true;
    this.#options.settle(error);
  }

  // A flag rather than off() in the end handlers: a ServerResponse's event table is not kept in shape, so
  // removing a listener turns it into a dictionary; the response is dropped right after anyway.
  readonly #clientGone = (): void => {
    if (!this.#done && clientGone(this.#options.res))
      this.#controller?.abort(new GatewayError("CLIENT_CLOSED"));
  };
}
