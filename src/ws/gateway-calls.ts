import { randomBytes } from "node:crypto";

/** A node's answer to one of the gateway's own calls: its text and top-level members, or undefined if lost. */
export type GatewayCallAnswer = (
  answer: { text: string; members: ReadonlyMap<string, string> } | undefined,
) => void;

/**
 * Calls the gateway itself makes on a connection's upstream socket, to subscribe again after a move and
 * to fill a gap. Their ids (`"gateway-<tag>-<n>"`) are the gateway's: their answers are taken here and never
 * reach the client. None is charged to the caller's rate limit. The tag, random per connection, is one no
 * client can guess: a client call with the same id, at the node beside one of them, would have its answer
 * taken for the gateway's and be answered with the gateway's.
 */
export class GatewayCalls {
  #next = 0;
  #tag: string | undefined;
  readonly #waiting = new Map<string, GatewayCallAnswer>();
  readonly #send: (text: string) => void;

  constructor(send: (text: string) => void) {
    this.#send = send;
  }

  get size(): number {
    return this.#waiting.size;
  }

  /** Sends `method` with `params` (JSON text, or undefined for none) and hands its answer to `answer`. */
  call(method: string, params: string | undefined, answer: GatewayCallAnswer): void {
    this.#tag ??= randomBytes(8).toString("hex");
    const id = `"gateway-${this.#tag}-${++this.#next}"`;
    this.#waiting.set(id, answer);
    const withParams = params === undefined ? "" : `,"params":${params}`;
    this.#send(`{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)}${withParams}}`);
  }

  /** Takes the answer to one of its calls; false when `id` is not one of them. */
  settle(id: string, text: string, members: ReadonlyMap<string, string>): boolean {
    const answer = this.#waiting.get(id);
    if (answer === undefined) return false;
    this.#waiting.delete(id);
    answer({ text, members });
    return true;
  }

  /** The socket is gone: every call still waiting is answered with nothing. */
  abandon(): void {
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const answer of waiting) answer(undefined);
  }
}
