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
  /** The id of the anvil process this test started: the only process `kill` and `stop` signal. */
  readonly pid: number;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Sends `signal` to this anvil's process and waits for it to exit: SIGKILL is a node that dies. */
  kill(signal: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

export interface AnvilOptions {
  /** Behave like a full node that refuses historical state. */
  readonly pruned?: boolean;
  /** Mine a block every this many seconds; else a block per transaction. */
  readonly blockTime?: number;
  /** Listen on this port (a node restarted where it was) rather than a free one. */
  readonly port?: number;
  /**
   * Mine only on `evm_mine`, on a genesis block of this timestamp: nodes started alike and mined with
   * the same timestamps and transactions build the same chain, block hashes and all.
   */
  readonly sameChainAs?: { readonly genesisTimestamp: number };
  /**
   * The chain id it answers to eth_chainId (anvil's own is 31337): a gateway that probes its upstreams
   * serves a node only when this is its label's registry `chainId`.
   */
  readonly chainId?: number;
}

/** A real local EVM node on loopback, started by this process and answering once this resolves. */
export async function startAnvil(options: AnvilOptions = {}): Promise<Anvil> {
  const port = options.port ?? (await freePort());
  const args = ["--port", String(port), "--host", "127.0.0.1", "--silent"];
  if (options.pruned) args.push("--prune-history");
  if (options.blockTime !== undefined) args.push("--block-time", String(options.blockTime));
  if (options.chainId !== undefined) args.push("--chain-id", String(options.chainId));
  if (options.sameChainAs !== undefined)
    args.push("--no-mining", "--timestamp", String(options.sameChainAs.genesisTimestamp));
  const child: ChildProcess = spawn(anvilBinary(), args, { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // A process killed by a signal has a signalCode and no exitCode.
  const running = () => child.exitCode === null && child.signalCode === null;
  const kill = async (signal: NodeJS.Signals) => {
    if (!running()) return;
    child.kill(signal);
    await exited;
  };
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
    let failure: unknown;
    const answered = await rpc("eth_chainId").then(
      () => true,
      (error: unknown) => {
        failure = error;
        return false;
      },
    );
    // on a given port, an answer while this anvil has exited (it could not bind) came from something else
    if (!running()) throw new Error(`anvil exited before it answered on port ${port}`);
    if (answered) break;
    if (Date.now() > deadline) {
      await kill("SIGKILL");
      throw new Error(`anvil did not start: ${String(failure)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    port,
    pid: child.pid as number,
    rpc,
    kill,
    stop: () => kill("SIGTERM"),
  };
}
