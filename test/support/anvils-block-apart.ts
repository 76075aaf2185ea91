import { type Anvil, startAnvil } from "./anvil.js";

const GENESIS = 1_700_000_000;

/** Two real anvils on one chain, and the hash of the newest block, which only `a` has. */
export interface AnvilsBlockApart {
  readonly a: Anvil;
  readonly b: Anvil;
  readonly hash: string;
  stop(): Promise<void>;
}

/**
 * Two anvils that mine the same three blocks (one genesis, block times fixed), then `a` one more alone: `b`
 * is a block behind, and a read of `a`'s newest block by hash finds nothing on it (by-hash retries).
 */
export async function startAnvilsBlockApart(): Promise<AnvilsBlockApart> {
  const [a, b] = await Promise.all([
    startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 }),
    startAnvil({ sameChainAs: { genesisTimestamp: GENESIS }, chainId: 1 }),
  ]);
  for (let i = 1; i <= 3; i++) for (const node of [a, b]) await node.rpc("evm_mine", [GENESIS + 12 * i]);
  await a.rpc("evm_mine", [GENESIS + 48]);
  const hash = (await a.rpc<{ hash: string }>("eth_getBlockByNumber", ["latest", false])).hash;
  return {
    a,
    b,
    hash,
    stop: async () => {
      await Promise.all([a.stop(), b.stop()]);
    },
  };
}
