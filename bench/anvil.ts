// A real EVM node for the cache scenario's dApp workload: anvil (the optional npm package
// @foundry-rs/anvil-linux-amd64, or one on the PATH), mining a block every second, with a chain to read:
// a contract that logs, a few transactions with receipts, and a hundred blocks on top, so that they are
// final (anvil names finalized the head - 64).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { freePort } from "./processes.js";

/** anvil from the optional npm package, else one on the PATH; undefined when there is none. */
export function anvilBinary(root: string): string | undefined {
  const local = join(root, "node_modules", ".bin", "anvil");
  if (existsSync(local)) return local;
  return (process.env.PATH ?? "")
    .split(delimiter)
    .map((dir) => join(dir, "anvil"))
    .find((file) => existsSync(file));
}

export interface Anvil {
  readonly url: string;
  readonly ws: string;
  /** The id of the anvil process this bench started, the only one `stop` signals. */
  readonly pid: number;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  stop(): Promise<void>;
}

/** anvil on loopback, with `--block-time` and `--chain-id` as the bench's `eth` label needs (chain 1). */
export async function startAnvil(binary: string, blockSeconds: number, chainId: number): Promise<Anvil> {
  const port = await freePort();
  const args = ["--port", String(port), "--host", "127.0.0.1", "--silent"];
  args.push("--block-time", String(blockSeconds), "--chain-id", String(chainId));
  const child: ChildProcess = spawn(binary, args, { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  const url = `http://127.0.0.1:${port}`;
  const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const body = (await response.json()) as { result?: T; error?: unknown };
    if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
    return body.result as T;
  };
  const stop = async () => {
    process.removeListener("exit", kill);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    await exited;
  };
  const deadline = Date.now() + 15_000;
  while (
    !(await rpc("eth_chainId").then(
      () => true,
      () => false,
    ))
  ) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`anvil did not answer on port ${port}`);
    }
    await sleep(50);
  }
  return { url, ws: `ws://127.0.0.1:${port}`, pid: child.pid as number, rpc, stop };
}

/** What the dApp workload reads: all of it in blocks that were final when seeding ended. */
export interface SeededChain {
  readonly accounts: readonly string[];
  /** A contract that logs one event, topic its caller, on any call. */
  readonly contract: string;
  /** Hashes of the transactions sent: the deployment, calls that logged, transfers. */
  readonly transactions: readonly string[];
  /** The finalized height once seeding ended: blocks 0 to it are final. */
  readonly finalized: number;
}

// Runtime: CALLER PUSH1 32 PUSH1 0 LOG1 STOP (log memory[0..32] with the caller as topic). Init code:
// PUSH7 <runtime> PUSH1 0 MSTORE PUSH1 7 PUSH1 25 RETURN.
const LOGGER_INIT = "0x663360206000a10060005260076019f3";
const ONE_ETH = "0xde0b6b3a7640000";

/** Deploys the logger, calls it and sends transfers, then mines 100 blocks on top. */
export async function seedChain(anvil: Anvil): Promise<SeededChain> {
  const accounts = await anvil.rpc<string[]>("eth_accounts");
  const [deployer] = accounts as [string];
  const deployed = await anvil.rpc<string>("eth_sendTransaction", [{ from: deployer, data: LOGGER_INIT }]);
  await anvil.rpc("anvil_mine", ["0x1"]);
  const { contractAddress } = await receipt(anvil, deployed);
  const sent = [deployed];
  for (const from of accounts.slice(1, 7))
    sent.push(await anvil.rpc<string>("eth_sendTransaction", [{ from, to: contractAddress, data: "0x" }]));
  for (const [i, from] of accounts.slice(7, 10).entries())
    sent.push(await anvil.rpc<string>("eth_sendTransaction", [{ from, to: accounts[i], value: ONE_ETH }]));
  await anvil.rpc("anvil_mine", ["0x1"]);
  for (const hash of sent) await receipt(anvil, hash);
  await anvil.rpc("anvil_mine", ["0x64"]);
  const final = await anvil.rpc<{ number: string }>("eth_getBlockByNumber", ["finalized", false]);
  return { accounts, contract: contractAddress, transactions: sent, finalized: Number(final.number) };
}

async function receipt(
  anvil: Anvil,
  hash: string,
): Promise<{ contractAddress: string; blockNumber: string }> {
  for (let tries = 0; tries < 100; tries++) {
    const found = await anvil.rpc<{ contractAddress: string; blockNumber: string } | null>(
      "eth_getTransactionReceipt",
      [hash],
    );
    if (found !== null) return found;
    await sleep(100);
  }
  throw new Error(`no receipt for ${hash}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
