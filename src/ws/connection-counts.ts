/** The caps an upgrade is counted against: its served config's `limits.ws`, read at each upgrade. */
export interface ConnectionCaps {
  readonly maxConnectionsPerKey: number;
  readonly maxConnectionsPerIp: number;
}

/** Gives up a counted connection; a second call does nothing. */
export type Release = () => void;

/**
 * The open WebSocket connections per key (or public client) and per IP, against `limits.ws`'s caps. The
 * proxy makes one for all its served configs: a reload does not give a caller a second allowance beside
 * the connections it holds on the old config. With workers, every worker's count is its primary's
 * (proxy/cluster-connections.ts), so that the caps hold for the instance, not for each process.
 */
export interface ConnectionCounts {
  /**
   * Counts one connection of `client` from `ip` if both are under their caps, and calls `decided` with its
   * release, or with undefined when a cap is reached: at once here, after the primary's answer in a worker.
   */
  reserve(
    client: string,
    ip: string,
    caps: ConnectionCaps,
    decided: (release: Release | undefined) => void,
  ): void;
}

/** This process's own count. */
export class LocalConnectionCounts implements ConnectionCounts {
  readonly #perClient = new Map<string, number>();
  readonly #perIp = new Map<string, number>();

  reserve(
    client: string,
    ip: string,
    caps: ConnectionCaps,
    decided: (release: Release | undefined) => void,
  ): void {
    decided(this.take(client, ip, caps));
  }

  /** The release of one more connection of `client` from `ip`, or undefined when a cap is reached. */
  take(client: string, ip: string, caps: ConnectionCaps): Release | undefined {
    const byClient = this.#perClient.get(client) ?? 0;
    const byIp = this.#perIp.get(ip) ?? 0;
    if (byClient >= caps.maxConnectionsPerKey || byIp >= caps.maxConnectionsPerIp) return undefined;
    this.#perClient.set(client, byClient + 1);
    this.#perIp.set(ip, byIp + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.#perClient, client);
      decrement(this.#perIp, ip);
    };
  }
}

function decrement(counts: Map<string, number>, id: string): void {
  const next = (counts.get(id) ?? 1) - 1;
  if (next <= 0) counts.delete(id);
  else counts.set(id, next);
}
