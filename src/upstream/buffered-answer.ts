import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";
import type { CallerSide } from "../http/client-gone.js";
import { type AttemptGate, AttemptHandler } from "./attempt.js";
import { maskedAnswer, masksAnswer, passedHeaders } from "./response-relay.js";
import type { Upstream } from "./upstreams.js";

/** A whole upstream answer, read for the gateway to change before it goes out (a partial batch's merge). */
export interface WholeAnswer {
  readonly statusCode: number;
  readonly body: Buffer;
  /** The node that gave it. */
  readonly upstream: Upstream;
  /** The node's headers a client gets with it (response-relay.ts), as a flat list. */
  readonly headers: readonly string[];
}

/** An attempt that reads its answer whole once its call takes it; the upstream's interceptor caps its size. */
export class BufferedAnswer extends AttemptHandler {
  readonly #chunks: Buffer[] = [];
  #statusCode = 0;
  #headers: string[] = [];
  /** The node's headers, kept while its refusal is to be masked (response-relay.ts's rule). */
  #masked: IncomingHttpHeaders | undefined = undefined;

  constructor(upstream: Upstream, res: CallerSide, gate: AttemptGate) {
    super(upstream, res, gate);
  }

  /**
   * The answer, once the attempt ended without an error; a refusal with its upstream's secrets masked, as
   * a relayed one is: whoever reads it (a merge, a cache, a tier's retry) may send it out as it is.
   */
  get answer(): WholeAnswer {
    const { upstream } = this;
    if (this.#masked === undefined)
      return {
        statusCode: this.#statusCode,
        body: Buffer.concat(this.#chunks),
        upstream,
        headers: this.#headers,
      };
    const { body, headers } = maskedAnswer(upstream, this.#masked, this.#chunks);
    return { statusCode: this.#statusCode, body, upstream, headers };
  }

  protected taken(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    raw: IncomingHttpHeaders,
  ): void {
    this.#statusCode = statusCode;
    this.#headers = passedHeaders(raw);
    this.#masked = masksAnswer(this.upstream, statusCode, raw) ? raw : undefined;
  }

  protected data(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#chunks.push(chunk);
  }
}
