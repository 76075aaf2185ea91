import type { ServerResponse } from "node:http";
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
];
// Most of a node's headers (date, connection, keep-alive, server) are told apart by length alone.
const PASSED_BY_LENGTH: (readonly string[] | undefined)[] = [];
for (const name of PASSED_HEADERS)
  PASSED_BY_LENGTH[name.length] = [...(PASSED_BY_LENGTH[name.length] ?? []), name];

/**
 * The lower-case name of a header the client gets, or undefined. undici hands names over as the bytes
 * it parsed; they are compared as bytes, since turning each into a string showed in the profile.
 */
function passedName(name: Buffer | string): string | undefined {
  const candidates = PASSED_BY_LENGTH[name.length];
  if (candidates === undefined) return undefined;
  for (const candidate of candidates) if (sameName(name, candidate)) return candidate;
  return undefined;
}

function sameName(name: Buffer | string, lower: string): boolean {
  if (typeof name === "string") return name.toLowerCase() === lower;
  for (let i = 0; i < lower.length; i++) {
    // Names are tokens (RFC 9110 §5.6.2, checked by llhttp): setting bit 5 lower-cases a letter and
    // leaves "-" as it is, and no other token byte becomes a lower-case letter or "-" that way.
    if (((name[i] as number) | 0x20) !== lower.charCodeAt(i)) return false;
  }
  return true;
}

export interface RelayOptions {
  readonly res: ServerResponse;
  /** Past this many body bytes the upstream request is aborted; Infinity for streams. */
  readonly maxBytes: number;
  /** A stream: the client must see the status line before the first item, which may be minutes away. */
  readonly flushHeaders: boolean;
  readonly settle: (error?: unknown) => void;
}

/**
 * An undici dispatch handler that writes the upstream's answer straight into the client's response:
 * status and passed headers, then each chunk as it arrives, pausing the upstream socket while the client's
 * socket is full. It is undici's own handler interface (lib/core/request.js calls onConnect, onHeaders,
 * onData, onComplete, onError), so no Readable, promise or stream-finished listener stands between the
 * two sockets; `stream()` added those per request (bench/README.md).
 */
export class ResponseRelay implements Dispatcher.DispatchHandler {
  readonly #options: RelayOptions;
  #abort: ((error: Error) => void) | undefined;
  #resume: (() => void) | undefined;
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

  onConnect(abort: (error?: Error) => void): void {
    this.#abort = abort;
    const { res } = this.#options;
    // A request queued behind busy connections reaches here after its client may have left.
    if (clientGone(res)) abort(new GatewayError("CLIENT_CLOSED"));
    else res.on("close", this.#clientGone);
  }

  onHeaders(statusCode: number, raw: Buffer[] | string[] | null, resume: () => void): boolean {
    const { res, maxBytes, flushHeaders } = this.#options;
    // A flat [name, value, ...] list: writeHead takes it as is, with no object built per response.
    const headers: string[] = ["access-control-allow-origin", "*"];
    let declared = -1;
    for (let i = 0; raw !== null && i + 1 < raw.length; i += 2) {
      const name = passedName(raw[i] as Buffer | string);
      if (name === undefined) continue;
      const value = String(raw[i + 1]);
      headers.push(name, value);
      if (name === "content-length") declared = Number(value);
    }
    if (declared > maxBytes) throw new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes });
    // A declared length is enforced by undici's parser; only an undeclared one needs counting.
    this.#counted = declared < 0 && maxBytes !== Number.POSITIVE_INFINITY;
    this.#remaining = declared;
    res.writeHead(statusCode, headers);
    if (flushHeaders) res.flushHeaders();
    this.#resume = resume;
    return true;
  }

  onData(chunk: Buffer): boolean {
    const { res, maxBytes } = this.#options;
    if (this.#counted) {
      this.#seen += chunk.length;
      if (this.#seen > maxBytes) throw new GatewayError("UPSTREAM_RESPONSE_TOO_LARGE", { maxBytes });
    }
    if (chunk.length === this.#remaining) {
      // The last bytes of a declared length (most answers come in one chunk): writing them with end()
      // saves the response a second pass through its write path.
      this.#ended = true;
      res.end(chunk);
      return true;
    }
    if (this.#remaining > 0) this.#remaining -= chunk.length;
    if (res.write(chunk)) return true;
    // undici pauses the upstream socket until resume(); most answers never fill the client's socket.
    if (!this.#waitingForDrain) {
      this.#waitingForDrain = true;
      res.on("drain", () => {
        if (!this.#done) this.#resume?.();
      });
    }
    return false;
  }

  onComplete(): void {
    this.#finish();
    if (!this.#ended) this.#options.res.end();
    this.#options.settle();
  }

  onError(error: Error): void {
    this.#finish();
    this.#options.settle(error);
  }

  readonly #clientGone = (): void => {
    if (!this.#done && clientGone(this.#options.res)) this.#abort?.(new GatewayError("CLIENT_CLOSED"));
  };

  // A flag, not off(): a ServerResponse's event table is not kept in shape, so removing a listener
  // deletes a key and turns it into a dictionary; the response is dropped right after anyway.
  #finish(): void {
    this.#done = true;
  }
}
