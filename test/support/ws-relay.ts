import { WebSocket, WebSocketServer } from "ws";
import { freePort } from "./anvil.js";
import type { Client } from "./ws-client.js";

/** A JSON-RPC call as a relay reads it (a batch is an array and reads as none). */
export interface RelayCall {
  readonly id?: unknown;
  readonly method?: string;
  readonly params?: unknown[];
}

/** What a relay's hooks may do with the connection a call came on. */
export interface RelayLink {
  /** Sends `text` to the gateway in the node's stead. */
  reply(text: string): void;
  /** Cuts both sockets, as a node lost without a close frame. */
  cut(): void;
}

export interface RelayHooks {
  /** A message from the gateway: true when the hook took it (answered, held), else it goes to the node. */
  fromGateway?(call: RelayCall, text: string, link: RelayLink): boolean;
  /** A node's message: the text the gateway gets instead, or undefined for the node's own. */
  fromNode?(text: string, call: RelayCall | undefined): string | undefined;
  /** A node's message has been written to the gateway's socket. */
  written?(text: string): void;
}

/**
 * A WebSocket relay of a test's own between the gateway and a node at `target`, which the hooks may make
 * answer as the software in front of a node (a rate limit, a range cap) or a lost socket would.
 */
export async function startWsRelay(target: string, hooks: RelayHooks) {
  const port = await freePort();
  const server = new WebSocketServer({ host: "127.0.0.1", port });
  server.on("connection", (client) => {
    const node = new WebSocket(target);
    const early: string[] = [];
    const asked = new Map<string, RelayCall>();
    const link: RelayLink = {
      reply: (text) => client.send(text),
      cut: () => {
        client.terminate();
        node.terminate();
      },
    };
    node.on("open", () => {
      for (const text of early.splice(0)) node.send(text);
    });
    node.on("message", (data) => {
      const text = data.toString();
      const answer = JSON.parse(text) as { id?: unknown };
      const call = Array.isArray(answer) ? undefined : asked.get(JSON.stringify(answer.id));
      const sent = hooks.fromNode?.(text, call) ?? text;
      client.send(sent, () => hooks.written?.(sent));
    });
    node.on("close", () => client.terminate());
    node.on("error", () => client.terminate());
    client.on("close", () => node.terminate());
    client.on("message", (data) => {
      const text = data.toString();
      const call = JSON.parse(text) as RelayCall;
      if (!Array.isArray(call) && hooks.fromGateway?.(call, text, link) === true) return;
      if (!Array.isArray(call)) asked.set(JSON.stringify(call.id), call);
      if (node.readyState === WebSocket.OPEN) node.send(text);
      else early.push(text);
    });
  });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  return {
    url: `ws://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}

/** The results of the notifications `client` got for the subscription `id`, in order. */
export function pushedTo(client: Client, id: unknown): Record<string, string>[] {
  return client.received
    .map(
      (text) =>
        JSON.parse(text) as { method?: string; params?: { subscription?: unknown; result?: unknown } },
    )
    .filter((message) => message.method === "eth_subscription" && message.params?.subscription === id)
    .map((message) => message.params?.result as Record<string, string>);
}
