import { WebSocket } from "ws";

// A raw JSON-RPC client over one WebSocket, for tests that look at every message: each kept as text,
// answers found by their id's source token.

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

export interface RpcAnswer {
  readonly id?: unknown;
  readonly result?: unknown;
  readonly error?: { code: number; message: string; data?: { code?: string } & Record<string, unknown> };
}

/** A raw JSON-RPC client over one socket: every message kept as text, answers found by id. */
export class Client {
  readonly ws: WebSocket;
  readonly received: string[] = [];
  readonly closed: Promise<Closed>;
  #closedWith: Closed | undefined;
  /** Far from the ids tests write by hand. */
  #nextId = 1000;
  readonly #waiters = new Set<() => void>();

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data) => {
      this.received.push(String(data));
      for (const wake of this.#waiters) wake();
    });
    ws.on("error", () => {});
    this.closed = new Promise((resolve) => {
      ws.once("close", (code, reason) => {
        this.#closedWith = { code, reason: reason.toString() };
        resolve(this.#closedWith);
        for (const wake of this.#waiters) wake();
      });
    });
  }

  /** `headers` go with the upgrade request (a traceparent, an X-Request-Id). */
  static open(url: string, headers?: Record<string, string>): Promise<Client> {
    const ws = new WebSocket(url, headers === undefined ? undefined : { headers });
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(new Client(ws)));
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
  }

  /** The upgrade is expected to be refused: its status, headers and JSON body. */
  static refused(
    url: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: unknown }> {
    const ws = new WebSocket(url, headers === undefined ? undefined : { headers });
    return new Promise((resolve, reject) => {
      ws.once("open", () => {
        ws.terminate();
        reject(new Error("the upgrade was accepted"));
      });
      ws.once("error", () => {});
      ws.once("unexpected-response", (_req, res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: JSON.parse(Buffer.concat(chunks).toString("utf8")),
          });
          ws.terminate();
        });
      });
    });
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  send(text: string | Buffer, binary = false): void {
    this.ws.send(text, { binary });
  }

  /** The first message (from `from` on) that `match` accepts. */
  async waitFor(match: (text: string) => boolean, timeoutMs = 3_000, from = 0): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.slice(from).find(match);
      if (found !== undefined) return found;
      if (this.#closedWith !== undefined)
        throw new Error(
          `socket closed (${this.#closedWith.code} ${this.#closedWith.reason}) before the answer`,
        );
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching message within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        const waiters = this.#waiters;
        waiters.add(done);
      });
    }
  }

  /** The answer whose id token is exactly `rawId` (single answers only). */
  async answerTo(rawId: string, timeoutMs = 3_000): Promise<RpcAnswer> {
    const text = await this.waitFor((t) => t.startsWith("{") && rawIdOf(t) === rawId, timeoutMs);
    return JSON.parse(text) as RpcAnswer;
  }

  /** Sends one call with a fresh numeric id and returns its answer. */
  async call(
    method: string,
    params: unknown[] | Record<string, unknown> = [],
    timeoutMs = 3_000,
  ): Promise<RpcAnswer> {
    const id = this.#nextId++;
    this.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return this.answerTo(String(id), timeoutMs);
  }

  close(): void {
    if (this.ws.readyState === WebSocket.CONNECTING || this.ws.readyState === WebSocket.OPEN)
      this.ws.terminate();
  }
}

/** The id member's source text of a single JSON-RPC answer. */
export function rawIdOf(text: string): string | undefined {
  return /"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|null)/.exec(text)?.[1];
}
