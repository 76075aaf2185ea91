import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import type { Admission, Admitted } from "../admission.js";
import type { GatewayConfig } from "../config/types.js";
import { upgradeRefusal } from "../errors/respond.js";
import { GatewayError } from "../errors/table.js";
import type { Logger } from "../log.js";
import type { Mount } from "../registry/types.js";
import type { UpstreamTable } from "../upstream/upstreams.js";
import { CLOSE } from "./close-codes.js";
import { Relay } from "./relay.js";

/**
 * WebSocket endpoints: `wss://<label>.{domain}/<API_KEY>`. Label, key and caps are checked, and the
 * upstream socket opened, before the client's handshake completes, so every refusal is an HTTP response.
 */
export class WebSocketGateway {
  readonly #config: GatewayConfig;
  readonly #admission: Admission;
  readonly #upstreams: UpstreamTable;
  readonly #logger: Logger;
  readonly #server: WebSocketServer;
  readonly #relays = new Map<Relay, string>();
  readonly #perClient = new Map<string, number>();
  readonly #perIp = new Map<string, number>();

  constructor(config: GatewayConfig, admission: Admission, upstreams: UpstreamTable, logger: Logger) {
    this.#config = config;
    this.#admission = admission;
    this.#upstreams = upstreams;
    this.#logger = logger;
    this.#server = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      // Compression off: a small deflated frame can inflate past any sane bound (limits-and-errors §2.7).
      perMessageDeflate: false,
      maxPayload: config.limits.ws.maxMessageBytes,
    });
  }

  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on("error", () => socket.destroy());
    this.#upgrade(req, socket, head).catch((error: unknown) => {
      const refusal = error instanceof GatewayError ? error : new GatewayError("INTERNAL");
      if (!(error instanceof GatewayError))
        this.#logger.log("error", "websocket upgrade failed", { error: String(error) });
      if (socket.writable) socket.end(upgradeRefusal(refusal));
      socket.destroy();
    });
  };

  /** Closes every connection, both sides, with 1001. */
  close(): void {
    for (const relay of this.#relays.keys()) relay.close(CLOSE.GOING_AWAY, "server shutting down");
  }

  /** Closes a key's connections when it is revoked or its account stops being active. */
  closeKey(keyId: string): void {
    for (const [relay, owner] of this.#relays)
      if (owner === keyId) relay.close(CLOSE.POLICY, "API key withdrawn");
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    if (req.headers.upgrade?.toLowerCase() !== "websocket") throw new GatewayError("WEBSOCKET_NOT_OFFERED");
    const { endpoint, publicHost } = this.#admission.endpoint(req);
    if (!endpoint.websocket) throw new GatewayError("WEBSOCKET_NOT_OFFERED", { label: endpoint.label });
    const admitted = this.#admission.admit(req, endpoint, publicHost);
    // The socket lives at the key itself: `/KEY`, or `/KEY/` as SDKs send what the user typed.
    if (admitted.target.segments.length > 0) throw new GatewayError("NOT_FOUND");
    const mount = endpoint.mounts.find((m) => m.policy.jsonrpc !== undefined) as Mount;
    const group = this.#upstreams.group(endpoint.label, mount.path);
    if (group === undefined)
      throw new GatewayError("NO_UPSTREAM", { reason: "no upstream is configured for this endpoint" });

    const release = this.#reserve(admitted);
    let upstream: WebSocket | undefined;
    let failure: unknown;
    // Like HTTP, one failover to the next upstream when the first cannot be reached.
    for (const candidate of group.order().slice(0, 2)) {
      try {
        upstream = await this.#connect(candidate.wsUrl, candidate.headers);
        break;
      } catch (error) {
        failure = error;
      }
    }
    if (upstream === undefined) {
      release();
      throw failure;
    }
    if (!socket.writable) {
      release();
      upstream.close();
      return;
    }
    const connected = upstream;
    this.#server.handleUpgrade(req, socket, head, (client) => {
      const policy = mount.policy.jsonrpc;
      if (policy === undefined) throw new GatewayError("INTERNAL");
      const relay = new Relay(client, connected, {
        rules: {
          policy,
          plan: admitted.principal?.plan,
          support: this.#config.support,
          transport: "websocket",
        },
        limits: this.#config.limits.ws,
        maxBatch: this.#config.limits.maxBatch,
        maxJsonDepth: this.#config.limits.maxJsonDepth,
        charge: (cost) => this.#admission.charge(admitted, cost),
        onClose: () => {
          this.#relays.delete(relay);
          release();
        },
      });
      this.#relays.set(relay, admitted.clientId);
      this.#logger.log("info", "websocket open", { label: endpoint.label, key: admitted.principal?.keyId });
    });
  }

  /** Counts the connection against its key (or public client) and its IP; undone when it closes. */
  #reserve(admitted: Admitted): () => void {
    const { maxConnectionsPerKey, maxConnectionsPerIp } = this.#config.limits.ws;
    const byClient = this.#perClient.get(admitted.clientId) ?? 0;
    const byIp = this.#perIp.get(admitted.ip) ?? 0;
    if (byClient >= maxConnectionsPerKey || byIp >= maxConnectionsPerIp) {
      throw new GatewayError("TOO_MANY_CONNECTIONS", { maxConnectionsPerKey, maxConnectionsPerIp });
    }
    this.#perClient.set(admitted.clientId, byClient + 1);
    this.#perIp.set(admitted.ip, byIp + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.#perClient, admitted.clientId);
      decrement(this.#perIp, admitted.ip);
    };
  }

  #connect(url: string, headers: Readonly<Record<string, string>>): Promise<WebSocket> {
    const { handshakeTimeoutMs } = this.#config.limits.ws;
    return new Promise((resolve, reject) => {
      const upstream = new WebSocket(url, {
        perMessageDeflate: false,
        handshakeTimeout: handshakeTimeoutMs,
        maxPayload: this.#config.limits.upstream.maxResponseBytes,
        headers: { ...headers },
      });
      upstream.once("open", () => resolve(upstream));
      upstream.once("error", (error: NodeJS.ErrnoException) => {
        upstream.terminate();
        const timedOut = /timed out/i.test(error.message);
        reject(
          new GatewayError(timedOut ? "UPSTREAM_TIMEOUT" : "NO_UPSTREAM", {
            reason: "the upstream WebSocket did not open",
          }),
        );
      });
    });
  }
}

function decrement(counts: Map<string, number>, id: string): void {
  const next = (counts.get(id) ?? 1) - 1;
  if (next <= 0) counts.delete(id);
  else counts.set(id, next);
}
