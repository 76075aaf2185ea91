import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../../src/dev/free-port.js";
import { ROOT } from "../registry/helpers.js";

/** anvil from the optional npm package, or one on the PATH. */
export function anvilBinary(): string {
  const local = join(ROOT, "node_modules/.bin/anvil");
  return existsSync(local) ? local : "anvil";
}

export { freePort };

export interface Anvil {
  readonly url: string;
  readonly port: number;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  stop(): Promise<void>;
}

/** A real local EVM node. `pruned` makes it behave like a full node that refuses historical state. */
export async function startAnvil(options: { pruned?: boolean; blockTime?: number } = {}): Promise<Anvil> {
  const port = await freePort();
  const args = ["--port", String(port), "--host", "127.0.0.1", "--silent"];
  if (options.pruned) args.push("--prune-history");
  if (options.blockTime !== undefined) args.push("--block-time", String(options.blockTime));
  const child: ChildProcess = spawn(anvilBinary(), args, { stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const body = (await response.json()) as { result?: T; error?: unknown };
    if (body.error !== undefined) throw new Error(JSON.stringify(body.error));
    return body.result as T;
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await rpc("eth_chainId");
      break;
    } catch (error) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`anvil did not start: ${String(error)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    url,
    port,
    rpc,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
