import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { NOTHING_HIDDEN } from "../config/upstream-name.js";
import { EXPOSED_HEADERS } from "../errors/respond.js";
import { withAnswerTag } from "../http/request-id.js";
import { type AttemptGate, AttemptHandler } from "./attempt.js";
import type { Upstream } from "./upstreams.js";

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

/**
 * The headers a client gets with a node's answer, as a flat [name, value, ...] list: writeHead takes it as
 * is, with no object built per response.
 */
export function passedHeaders(raw: IncomingHttpHeaders): string[] {
  const headers: string[] = [
    "access-control-allow-origin",
    "*",
    "access-control-expose-headers",
    EXPOSED_HEADERS,
  ];
  for (const name of PASSED_HEADERS) {
    const value = raw[name];
    if (value !== undefined) headers.push(name, String(value));
  }
  return headers;
}

/**
 * Whether a node's answer goes out with its upstream's secrets masked: a refusal (a 4xx or 5xx) or a
 * redirect (a 3xx, a provider's front's answer, never a node API's) from an upstream whose URL or headers
 * hold a secret, unless it is compressed (its bytes are not the node's text). A node's error page may quote
 * the path it was asked on ("Cannot POST /v3/<provider key>"), as Express's redirect page names its target
 * ("Redirecting to /v3/<provider key>/"), which is the operator's, never a caller's to see. One rule for every way an answer leaves: relayed, read whole
 * (buffered-answer.ts), or over a WebSocket's bridge to an HTTP node (ws/http-bridge.ts).
 */
export function masksAnswer(upstream: Upstream, statusCode: number, raw: IncomingHttpHeaders): boolean {
  return statusCode >= 300 && upstream.redact !== NOTHING_HIDDEN && raw["content-encoding"] === undefined;
}

/** A refusal `masksAnswer` holds: its body with the secrets masked, and the headers that go with it. */
export function maskedAnswer(
  upstream: Upstream,
  raw: IncomingHttpHeaders,
  chunks: readonly Buffer[],
): { body: Buffer; headers: string[] } {
  const body = Buffer.from(upstream.redact(Buffer.concat(chunks).toString("utf8")));
  return { body, headers: passedHeaders({ ...raw, "content-length": String(body.length) }) };
}

/**
 * An attempt that writes its answer straight into the client's response once its call takes it: status
 * and passed headers, then each chunk as it arrives, pausing the upstream socket while the client's
 * socket is full. No Readable, promise or stream-finished listener stands between the two sockets. The
 * answer's size cap is the upstream's interceptor's (interceptors.ts).
 */
export class ResponseRelay extends AttemptHandler<ServerResponse> {
  /** A stream: the client must see the status line before the first item, which may be minutes away. */
  readonly #flushHeaders: boolean;
  /** Told of the whole answer once it went out, when the call's answers show a height (src/answers/). */
  readonly #reader: AnswerReader | undefined;
  /** The answer's chunks, kept for the reader: the same buffers that went out, not copies. */
  #kept: Buffer[] | undefined = undefined;
  #statusCode = 0;
  #waitingForDrain = false;
  /** Body bytes still to come under a declared length; -1 when none was declared. */
  #remaining = -1;
  #ended = false;
  /** A node's refusal `masksAnswer` holds: read whole before it goes out with the secrets masked. */
  #masked: MaskedAnswer | undefined = undefined;

  constructor(
    upstream: Upstream,
    res: ServerResponse,
    gate: AttemptGate,
    stream: boolean,
    reader?: AnswerReader,
  ) {
    super(upstream, res, gate);
    this.#flushHeaders = stream;
    this.#reader = reader;
  }

  protected taken(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    raw: IncomingHttpHeaders,
  ): void {
    if (masksAnswer(this.upstream, statusCode, raw)) {
      this.#masked = { statusCode, raw, chunks: [] };
      return;
    }
    const { res } = this;
    const headers = passedHeaders(raw);
    if (this.#reader !== undefined) {
      this.#kept = [];
      this.#statusCode = statusCode;
    }
    this.#remaining = raw["content-length"] === undefined ? -1 : Number(raw["content-length"]);
    res.writeHead(statusCode, withAnswerTag(res, statusCode, headers));
    if (this.#flushHeaders) res.flushHeaders();
  }

  protected data(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#masked !== undefined) {
      this.#masked.chunks.push(chunk);
      return;
    }
    const { res } = this;
    this.#kept?.push(chunk);
    if (chunk.length === this.#remaining) {
      // The last bytes of a declared length (most answers come in one chunk): writing them with end()
      // saves the response a second pass through its write path.
      this.#ended = true;
      // read now, as the answer goes out, not at the node's message end a turn or more later: a head it
      // shows reaches the label's mark (and other workers or instances) before its caller can send its
      // next call. One read while a head it shows is on its way to other instances through Redis goes out
      // once they were told (`held`, served-head.ts `sharing`).
      const held = this.#readKept();
      if (held === undefined) res.end(chunk);
      else void held.then(() => res.end(chunk));
      return;
    }
    if (this.#remaining > 0) this.#remaining -= chunk.length;
    if (res.write(chunk)) return;
    // Paused until the client's socket drains; most answers never fill it.
    controller.pause();
    if (!this.#waitingForDrain) {
      this.#waitingForDrain = true;
      res.on("drain", () => {
        if (!this.over) this.controller?.resume();
      });
    }
  }

  protected override bodyEnd(): void {
    if (this.#masked !== undefined) this.#endMasked(this.#masked);
    const held = this.#readKept();
    if (!this.#ended) {
      this.#ended = true;
      if (held === undefined) this.res.end();
      else void held.then(() => this.res.end());
    }
    this.end();
  }

  #endMasked({ statusCode, raw, chunks }: MaskedAnswer): void {
    const { body, headers } = maskedAnswer(this.upstream, raw, chunks);
    this.res.writeHead(statusCode, withAnswerTag(this.res, statusCode, headers));
    this.res.end(body);
    this.#ended = true;
    if (this.#reader !== undefined) {
      this.#statusCode = statusCode;
      this.#kept = [body];
    }
  }

  /** Gives the reader the whole answer, once; what its end waits for, when the reader holds it. */
  #readKept(): Promise<void> | undefined {
    const kept = this.#kept;
    if (kept === undefined || this.#reader === undefined) return undefined;
    this.#kept = undefined;
    return this.#reader.read(
      this.upstream,
      this.#statusCode,
      kept.length === 1 ? (kept[0] as Buffer) : Buffer.concat(kept),
    );
  }
}

/** A node's refusal held until its end, to go out with its upstream's secrets masked. */
interface MaskedAnswer {
  readonly statusCode: number;
  readonly raw: IncomingHttpHeaders;
  readonly chunks: Buffer[];
}

/**
 * Reads a node's whole answer as it goes out to the client (src/answers/examined.ts): its last bytes go once
 * what `read` returns settles (a head it raised reached the other instances, served-head.ts `sharing`).
 */
export interface AnswerReader {
  read(upstream: Upstream, statusCode: number, body: Buffer): Promise<void> | undefined;
}
