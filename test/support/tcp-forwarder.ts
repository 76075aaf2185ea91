import { connect, createServer, type Socket } from "node:net";

/**
 * A TCP forwarder of a test's own between a client and a server on loopback, which can turn into a black
 * hole: it stops carrying bytes either way and closes nothing, as when a database host dies or a network
 * splits (no FIN, no RST reaches either end). Each end keeps its socket open and hears nothing, until
 * something of its own (a timeout, a heartbeat) says it is dead.
 */
export interface TcpForwarder {
  readonly port: number;
  /**
   * From now on every byte of every connection, both ways, is dropped, and nothing is closed; a new
   * connection is accepted and then hears nothing either.
   */
  blackHole(): void;
  /** New connections are carried to the server again; those the black hole took stay in it, silent. */
  restore(): void;
  /** Connections accepted so far, for a test's report. */
  readonly accepted: number;
  /** Destroys every socket and stops listening. */
  close(): Promise<void>;
}

const HOST = "127.0.0.1";

/** Reads and drops whatever `socket` receives from now on, and never forwards it again. */
function swallow(socket: Socket): void {
  // unpipe also drops the pipe's own "end" listener, which would have ended the other side
  socket.unpipe();
  socket.on("data", () => {});
  socket.resume();
}

/** Listens on a free loopback port and forwards every connection to `targetPort` on loopback. */
export async function startTcpForwarder(targetPort: number): Promise<TcpForwarder> {
  let dark = false;
  let accepted = 0;
  const sockets = new Set<Socket>();
  /** The pairs being carried, for blackHole() to stop. */
  const carried = new Set<[Socket, Socket]>();

  const track = (socket: Socket) => {
    sockets.add(socket);
    // an end that goes away (a client that destroys its socket): nothing to report
    socket.on("error", () => {});
    socket.once("close", () => sockets.delete(socket));
  };

  // allowHalfOpen: a side that closes is not answered by closing the other: the black hole answers nothing
  const server = createServer({ allowHalfOpen: true }, (client) => {
    accepted += 1;
    track(client);
    if (dark) {
      swallow(client);
      return;
    }
    const upstream = connect({ host: HOST, port: targetPort, allowHalfOpen: true });
    track(upstream);
    const pair: [Socket, Socket] = [client, upstream];
    carried.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    // while carried, a side that fails or closes takes the other with it, as a real path would
    const closeBoth = () => {
      if (!carried.has(pair)) return;
      carried.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.once("close", closeBoth);
    upstream.once("close", closeBoth);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, HOST, () => resolve());
  });
  const { port } = server.address() as { port: number };

  return {
    port,
    blackHole() {
      dark = true;
      for (const pair of carried) for (const socket of pair) swallow(socket);
      carried.clear();
    },
    restore() {
      dark = false;
    },
    get accepted() {
      return accepted;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
