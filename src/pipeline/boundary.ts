import { GatewayError } from "../errors/table.js";
import { withoutKeys } from "../keys/types.js";
import type { Logger } from "../log.js";

/** Where an error was caught: one of the pipeline's three transports. */
export type Transport = "http request" | "websocket upgrade" | "websocket message";

/** What a log line may say about the request an error broke: never its key. */
export interface ErrorScene {
  readonly label?: string | undefined;
  readonly upstream?: string | undefined;
  /** The HTTP request's id (X-Request-Id), which its answer and access line carry too. */
  readonly requestId?: string | undefined;
}

/**
 * The one place where an error becomes what a caller is told. A GatewayError is the pipeline's own
 * refusal and passes as it is. Anything else is a defect of the gateway's: it is logged at `error` with
 * its stack, the transport and the label, and the request or message it broke is answered INTERNAL (500,
 * or -32603 in a JSON-RPC frame). Only that one: the HTTP request listener, the WebSocket upgrade and
 * every WebSocket connection's listeners catch what their work throws and hand it here, so no request,
 * message or connection can take the process, or any other caller's request, down with it (docs/errors.md).
 */
export class ErrorBoundary {
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** The error to answer with; an unexpected one is logged first. */
  caught(error: unknown, transport: Transport, scene: ErrorScene = {}): GatewayError {
    if (error instanceof GatewayError) return error;
    this.#logger.log("error", "unhandled", {
      code: "INTERNAL",
      transport,
      label: scene.label,
      upstream: scene.upstream,
      requestId: scene.requestId,
      // An error's message may quote what it choked on, a URL with its key say.
      error: withoutKeys(error instanceof Error ? (error.stack ?? String(error)) : String(error)),
    });
    return new GatewayError("INTERNAL");
  }
}
