import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One JSON-RPC call a recording node was asked. */
export interface RecordedCall {
  readonly method: string;
  readonly params: unknown;
}

/** A node in front of a real one (anvil) that records every JSON-RPC call it forwards, batches included. */
export interface RecordingNode {
  readonly url: string;
  readonly calls: RecordedCall[];
  /** Each request waits this long before it is forwarded: a slow node. */
  delayMs: number;
  /**
   * How long the answer to a request holding this call is held after the node gave it (0: not at all): a
   * node that read its state, then was slow to answer, while its chain moved on.
   */
  answerLateMs: ((call: RecordedCall) => number) | undefined;
  close(): Promise<void>;
}

/** Starts a recording node on loopback that forwards every request to `target` and relays its answer. */
export async function startRecordingNode(target: string): Promise<RecordingNode> {
  const calls: RecordedCall[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const parsed = JSON.parse(body) as RecordedCall | RecordedCall[];
      for (const call of Array.isArray(parsed) ? parsed : [parsed])
        calls.push({ method: call.method, params: call.params });
      if (node.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, node.delayMs));
      const answer = await fetch(target, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      const text = await answer.text();
      const late = Math.max(
        0,
        ...(Array.isArray(parsed) ? parsed : [parsed]).map((c) => node.answerLateMs?.(c) ?? 0),
      );
      if (late > 0) await new Promise((resolve) => setTimeout(resolve, late));
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const node: RecordingNode = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    delayMs: 0,
    answerLateMs: undefined,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return node;
}

/**
 * Whether the node has answered a call with these params that was sent at or after `from` (an index in
 * `calls`): a prober sends its calls one after another, so a later call means the answer is in and read.
 */
export function answeredSince(node: RecordingNode, from: number, params: unknown): boolean {
  const wanted = JSON.stringify(params);
  for (let i = from; i < node.calls.length - 1; i++)
    if (JSON.stringify(node.calls[i]?.params) === wanted) return true;
  return false;
}
