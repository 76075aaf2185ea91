import { connect, type Socket } from "node:net";

// Raw HTTP/1.1 over a TCP socket, for requests that undici and node:http refuse to send (two Host
// headers, absolute-form or dot-segment targets, no Host at all, a trickled body).

export interface RawResponse {
  readonly status: number;
  /** Lower-cased names; a repeated header's values joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  /** The body as UTF-8 text (chunked framing removed). */
  readonly text: string;
  /** False when the connection closed before the body's framing (length or last chunk) was complete. */
  readonly complete: boolean;
}

export interface RawConnection {
  readonly socket: Socket;
  write(data: string | Buffer): Promise<void>;
  /**
   * The first response once complete, or what arrived of it before the connection closed (`complete`
   * false, `text` then holds the raw body bytes); undefined when the server closed without one.
   */
  readonly response: Promise<RawResponse | undefined>;
  /** Settles when the connection is closed or reset by either side. */
  readonly closed: Promise<void>;
  /** Whether `closed` has settled. */
  isClosed(): boolean;
  close(): void;
}

/** Opens a connection to 127.0.0.1:`port`; nothing is sent until `write`. */
export async function openRaw(port: number): Promise<RawConnection> {
  const socket = connect({ host: "127.0.0.1", port });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let received = Buffer.alloc(0);
  let done = false;
  let closedFlag = false;
  let settleResponse: (r: RawResponse | undefined) => void = () => {};
  const response = new Promise<RawResponse | undefined>((resolve) => {
    settleResponse = (r) => {
      if (done) return;
      done = true;
      resolve(r);
    };
  });
  const closed = new Promise<void>((resolve) => {
    socket.once("close", () => {
      closedFlag = true;
      settleResponse(parseResponse(received, true));
      resolve();
    });
  });
  // A reset after the server answered (or gave up) is an outcome, not a test failure.
  socket.on("error", () => {});
  socket.on("data", (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    const parsed = parseResponse(received, false);
    if (parsed !== undefined) settleResponse(parsed);
  });
  return {
    socket,
    response,
    closed,
    isClosed: () => closedFlag,
    write: (data) =>
      new Promise<void>((resolve, reject) => {
        socket.write(data, (error) => (error ? reject(error) : resolve()));
      }),
    close: () => {
      socket.destroy();
    },
  };
}

/** Sends `data` as is and returns the first response; rejects when the server closes without one. */
export async function rawRequest(
  port: number,
  data: string | Buffer,
  timeoutMs = 10_000,
): Promise<RawResponse> {
  const conn = await openRaw(port);
  try {
    await conn.write(data);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no response within ${timeoutMs} ms`)), timeoutMs);
    });
    const response = await Promise.race([conn.response, timeout]).finally(() => clearTimeout(timer));
    if (response === undefined) throw new Error("the server closed the connection without a response");
    return response;
  } finally {
    conn.close();
  }
}

/** A complete response from the bytes so far, or undefined; `eof` lets a close end an unframed body. */
function parseResponse(bytes: Buffer, eof: boolean): RawResponse | undefined {
  const end = bytes.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const lines = bytes.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number((lines[0] ?? "").split(" ")[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const rest = bytes.subarray(end + 4);
  if (status === 204 || status === 304 || (status >= 100 && status < 200)) {
    return { status, headers, text: "", complete: true };
  }
  const length = headers["content-length"];
  if (length !== undefined) {
    const n = Number(length);
    if (rest.length < n)
      return eof ? { status, headers, text: rest.toString("utf8"), complete: false } : undefined;
    return { status, headers, text: rest.subarray(0, n).toString("utf8"), complete: true };
  }
  if (/\bchunked\b/i.test(headers["transfer-encoding"] ?? "")) {
    const body = dechunk(rest);
    if (body === undefined)
      return eof ? { status, headers, text: rest.toString("utf8"), complete: false } : undefined;
    return { status, headers, text: body.toString("utf8"), complete: true };
  }
  return eof ? { status, headers, text: rest.toString("utf8"), complete: true } : undefined;
}

function dechunk(bytes: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf("\r\n", at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString("latin1"), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) return Buffer.concat(parts);
    if (bytes.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
