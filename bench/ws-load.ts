import { request } from "undici";
import WebSocket from "ws";
import { percentile } from "./stats.js";

export interface FanoutOptions {
  readonly url: string;
  readonly host?: string;
  readonly connections: number;
  readonly pushes: number;
  /** The bench node's control endpoint that pushes one notification to every subscriber. */
  readonly pushUrl: string;
  /** RSS of the process that holds the connections (the gateway), or undefined when measuring direct. */
  readonly rss?: () => number;
}

export interface FanoutResult {
  readonly connections: number;
  /** The holder's RSS growth over all N connections, per connection. */
  readonly bytesPerConnection: number | undefined;
  /** The growth from N/2 to N connections, per connection: what one more costs. */
  readonly marginalBytesPerConnection: number | undefined;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/**
 * N subscribed idle connections, then notifications pushed to all of them. Memory per connection is the
 * holder's RSS growth over N; latency runs from the node's send to the client's receipt, both read from
 * process.hrtime, which is the system's monotonic clock in every process.
 */
export async function wsFanout(options: FanoutOptions): Promise<FanoutResult> {
  const before = options.rss?.();
  const sockets: WebSocket[] = [];
  let onNotification: (sentAt: bigint) => void = () => {};
  const openUpTo = async (count: number) => {
    while (sockets.length < count) {
      const batch = Math.min(200, count - sockets.length);
      const ready = Array.from({ length: batch }, () =>
        subscribe(options, (sentAt) => onNotification(sentAt)),
      );
      sockets.push(...(await Promise.all(ready)));
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  };
  // Half first, then the rest: the second half's growth is what a connection adds once the holder's
  // heaps have grown for the burst of handshakes, which the whole growth over N also carries.
  const half = Math.floor(options.connections / 2);
  await openUpTo(half);
  const middle = options.rss?.();
  await openUpTo(options.connections);
  const after = options.rss?.();

  const latencies: number[] = [];
  for (let i = 0; i < options.pushes; i++) {
    let left = sockets.length;
    const all = new Promise<void>((resolve) => {
      onNotification = (sentAt) => {
        latencies.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
        if (--left === 0) resolve();
      };
    });
    await request(options.pushUrl, { method: "POST" }).then((r) => r.body.text());
    await all;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await Promise.all(
    sockets.map((socket) => new Promise((resolve) => socket.once("close", resolve).close(1000))),
  );
  return {
    connections: sockets.length,
    bytesPerConnection:
      before === undefined || after === undefined ? undefined : (after - before) / options.connections,
    marginalBytesPerConnection:
      middle === undefined || after === undefined
        ? undefined
        : (after - middle) / (options.connections - half),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

function subscribe(options: FanoutOptions, notified: (sentAt: bigint) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(options.url, {
      perMessageDeflate: false,
      ...(options.host === undefined ? {} : { headers: { host: options.host } }),
    });
    socket.once("error", reject);
    socket.once("open", () =>
      socket.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}'),
    );
    socket.on("message", (data) => {
      const text = String(data);
      if (text.includes('"id":1')) return resolve(socket);
      const stamp = /"sentAt":"(\d+)"/.exec(text)?.[1];
      if (stamp !== undefined) notified(BigInt(stamp));
    });
  });
}
