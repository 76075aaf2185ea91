import type { GatewayError } from "../errors/table.js";
import type { Upstream } from "../upstream/upstreams.js";
import type { Reconnect } from "./move.js";
import type { NodeSocket } from "./node-socket.js";

/** What a connection lends the choice of a better node for it. */
export interface ChoosingConnection {
  readonly closed: boolean;
  /** The node its calls go to. */
  readonly node: Upstream;
  /** It is moving (move.ts) now. */
  readonly moving: boolean;
  /** Its node holds state for it (a WebSocket-only call went there, or a pinned subscription): it stays. */
  readonly holdsNodeState: boolean;
  readonly clientOpen: boolean;
  /** How long until a move of its own accord is allowed again (move.ts untilChoice); 0: now. */
  untilChoice(): number;
  /** A write of its waits for its node's answer, which a move would lose. */
  writeWaiting(): boolean;
  /** Whether another node of the label would serve it better than `node` (group.ts betterThan). */
  betterThan(node: Upstream): boolean;
  readonly reconnect: Reconnect;
  guard<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void;
  /** Moves to `node`, on `socket`, already open: the connection leaves its own node, which still answers. */
  moveTo(socket: NodeSocket, node: Upstream): void;
}

/**
 * When a connection leaves a node that still answers (one behind the others, cordoned, a fallback while a
 * primary is back) for a better one: once no write of its waits for the node's answer, and only once a
 * socket on the better node is open, so that the connection keeps its node if no better one takes one.
 */
export class NodeChoice {
  readonly #connection: ChoosingConnection;
  /** A socket being opened on a better node (#choose). */
  #choosing = false;
  /** A choice asked for while the connection moved or chose: made once that is done. */
  #again = false;
  /** A chosen move waiting for the minute's 3 to allow it. */
  #retry: NodeJS.Timeout | undefined = undefined;
  /** Its node left rotation while a write waited for its answer: it moves once none waits. */
  #onceAnswered = false;

  constructor(connection: ChoosingConnection) {
    this.#connection = connection;
  }

  /**
   * The connection's node left rotation but answers: the connection moves to one in rotation once no write
   * of its waits for the node's answer. One whose node holds its state stays: the node still answers.
   */
  nodeLeftRotation(): void {
    const connection = this.#connection;
    if (connection.closed || connection.holdsNodeState) return;
    const wait = connection.untilChoice();
    if (wait > 0) {
      // moved of its own accord 3 times this minute: it tries again once it may
      this.#retry ??= setTimeout(() => {
        this.#retry = undefined;
        if (connection.betterThan(connection.node)) this.nodeLeftRotation();
      }, wait);
      this.#retry.unref();
      return;
    }
    if (connection.writeWaiting()) this.#onceAnswered = true;
    else this.#choose();
  }

  /** Its node answered: a choice that waited for its writes' answers is made once none waits. */
  answered(): void {
    const connection = this.#connection;
    if (!this.#onceAnswered || connection.writeWaiting()) return;
    this.#onceAnswered = false;
    if (connection.betterThan(connection.node)) this.#choose();
  }

  /**
   * A move ended: a choice asked for meanwhile is made now, and so is one away from a node that left
   * rotation while the connection moved to it (the same probe round judged it). Only a node out of
   * rotation: a primary just lost may not be known to be out yet, and a fallback's connection would go
   * back to it.
   */
  moved(): void {
    const connection = this.#connection;
    const again = this.#again;
    this.#again = false;
    if ((again || !connection.node.health.inRotation) && connection.betterThan(connection.node))
      this.nodeLeftRotation();
  }

  stop(): void {
    clearTimeout(this.#retry);
  }

  /**
   * Opens a socket on a node that serves the connection better, and moves there only once it is open: the
   * connection's own node still answers, and stays its node if no better one takes a socket.
   */
  #choose(attempt = 1): void {
    const connection = this.#connection;
    if (connection.closed) return;
    if (this.#choosing || connection.moving) {
      // a change of state while the connection moves or opens a socket: judged again once that is done
      this.#again = true;
      return;
    }
    this.#choosing = true;
    const from = connection.node;
    connection.reconnect(
      () => !connection.closed,
      connection.guard((error: GatewayError | undefined, socket?: NodeSocket, node?: Upstream) => {
        this.#choosing = false;
        const again = this.#again;
        this.#again = false;
        const better =
          error === undefined &&
          socket !== undefined &&
          node !== undefined &&
          node !== from &&
          !connection.betterThan(node);
        const stay =
          !better ||
          connection.closed ||
          connection.node !== from ||
          connection.moving ||
          // node state, or a client leaving, since it began: the connection cannot move now
          connection.holdsNodeState ||
          !connection.clientOpen;
        if (stay || connection.writeWaiting()) {
          socket?.close();
          // a write sent meanwhile: it moves once that is answered, as nodeLeftRotation has it
          if (!stay) this.#onceAnswered = true;
          // the node it opened on left rotation meanwhile (a probe round judges nodes one by one): once more
          if (!better && node !== undefined && attempt < 3 && connection.betterThan(from))
            this.#choose(attempt + 1);
          else if (again && connection.betterThan(connection.node)) this.nodeLeftRotation();
          return;
        }
        connection.moveTo(socket, node);
      }),
      from,
    );
  }
}
