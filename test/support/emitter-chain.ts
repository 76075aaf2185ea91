import { privateKeyToAccount } from "viem/accounts";
import { type Anvil, startAnvil } from "./anvil.js";

// A contract that logs one event per call, on real anvils: for the suites of log queries and `logs`
// subscriptions. Two anvils started alike (`startSameChainPair`) build the same blocks, hashes and all,
// as long as they are mined alike (`mineEmitterCall` with the same time and gas on both).

export const EMITTER = "0x00000000000000000000000000000000000e0175";
export const TOPIC = `0x${"ab".repeat(32)}`;
/** PUSH32 TOPIC, PUSH1 0, PUSH1 0, LOG1, STOP: every call logs one event. */
export const EMITTER_CODE = `0x7f${TOPIC.slice(2)}60006000a100`;
/** The pair's genesis timestamp: their blocks' times count from it. */
export const GENESIS = 1_700_000_000;
/** anvil's first dev account, whose key signs the calls. */
const DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const account = privateKeyToAccount(DEV_KEY);

/** Two anvils on one chain, mining only when told (`evm_mine`), with the emitter in place on both. */
export async function startSameChainPair(): Promise<[Anvil, Anvil]> {
  const pair = await Promise.all([
    startAnvil({ sameChainAs: { genesisTimestamp: GENESIS } }),
    startAnvil({ sameChainAs: { genesisTimestamp: GENESIS } }),
  ]);
  for (const node of pair) await node.rpc("anvil_setCode", [EMITTER, EMITTER_CODE]);
  return pair;
}

/** Mines one block at `time` on each of `nodes`, with one signed call to the emitter of `gas` at `nonce`. */
export async function mineEmitterCall(
  nodes: readonly Anvil[],
  { time, nonce, gas = 100_000n }: { time: number; nonce: number; gas?: bigint },
): Promise<void> {
  const raw = await signedEmitterCall(nonce, gas);
  for (const node of nodes) await node.rpc("eth_sendRawTransaction", [raw]);
  for (const node of nodes) await node.rpc("evm_mine", [time]);
}

/** One signed call to the emitter at `nonce`, as raw transaction bytes. */
export function signedEmitterCall(nonce: number, gas = 100_000n): Promise<string> {
  return account.signTransaction({
    chainId: 31337,
    type: "eip1559",
    to: EMITTER,
    nonce,
    gas,
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1n,
  });
}
