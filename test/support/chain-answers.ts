import { NodeRejection, type NodeState } from "./node-software.js";
import type { TypicalAnswer } from "./typical-calls.js";

// How a real node answers its interface's registry `chain` call, for the chain a loopback node serves
// (its state's chainId or chain), keyed like HEAD_ANSWERS. Calls that are also head calls (NEAR's status,
// toncenter's getMasterchainInfo, Octez's head header) name the chain in their HEAD_ANSWERS entry.
// Shapes as each software writes them (node-software.ts lists where each was read).

const hex = (n: number): string => `0x${n.toString(16)}`;
const pad64 = (n: number): string => n.toString(16).padStart(64, "0");

/** A block hash that is not the genesis block's, for a by-height call at another height. */
const hashAt = (height: number): string => `0x${pad64(height + 0xabc0_0000)}`;

/** A Substrate block's hash, as chain_getBlockHash and its child's parentHash name it; block 0's is the genesis hash. */
export const substrateHash = (genesis: string | undefined, number: number): string =>
  number === 0 && genesis !== undefined ? genesis : hashAt(number);

/** The number of the block a Substrate hash names here (substrateHash), or undefined for no such block. */
export function substrateNumber(genesis: string | undefined, hash: unknown): number | undefined {
  if (typeof hash !== "string" || !/^0x[0-9a-f]{64}$/.test(hash)) return undefined;
  if (hash === genesis) return 0;
  const number = Number.parseInt(hash.slice(2), 16) - 0xabc0_0000;
  return Number.isSafeInteger(number) && number > 0 ? number : undefined;
}

const firstParam = (params: unknown): unknown => (Array.isArray(params) ? params[0] : undefined);

/** Named params: a JSON object rather than an array. */
const isNamed = (params: unknown): params is Record<string, unknown> =>
  typeof params === "object" && params !== null && !Array.isArray(params);

/** UniValue's type name for a JSON value (uvTypeName). */
const jsonType = (value: unknown): string =>
  value === null
    ? "null"
    : Array.isArray(value)
      ? "array"
      : typeof value === "object"
        ? "object"
        : typeof value === "boolean"
          ? "bool"
          : typeof value;

export const CHAIN_ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  // An EVM node (geth, reth, avalanchego, bsc, frontier) and java-tron's /jsonrpc: the chain id. anvil's
  // own 31337 where the registry declares none (Atleta).
  eth_chainId: { result: ({ chainId }) => hex(chainId ?? 31337) },
  // Substrate: a block hash by number; block 0's is the genesis hash. The number is a JSON number or a hex
  // string (NumberOrHex), and a block above the best one is null either way: polkadot-sdk
  // substrate/client/rpc/src/chain/chain_full.rs block_hash answers client.hash(n), None past the best.
  chain_getBlockHash: {
    result: ({ chain, height }, params) => {
      const param = firstParam(params);
      // NumberOrHex: a string is hex with its 0x (serde's U256 from_str), else jsonrpsee's invalid params
      if (typeof param === "string" && !/^0x[0-9a-fA-F]+$/.test(param))
        throw new NodeRejection(-32602, "Invalid params");
      const number =
        typeof param === "string" ? Number.parseInt(param.slice(2), 16) : Number(param ?? height);
      if (number === 0) return chain;
      return number > height ? null : substrateHash(chain, number);
    },
  },
  // Bitcoin Core, Dogecoin Core: getblockhash height; height 0 is the genesis block. The height positional
  // or named ({"height": n}: src/rpc/server.cpp transformNamedArguments); one outside 0..tip is
  // RPC_INVALID_PARAMETER (-8) "Block height out of range" (src/rpc/blockchain.cpp getblockhash), a
  // non-number a -3 type error naming the argument, none at all the method's help as -1.
  getblockhash: {
    result: ({ chain, height }, params) => {
      const number = isNamed(params) ? params.height : firstParam(params);
      // a required argument left out: RPCHelpMan answers its help text as RPC_MISC_ERROR (-1)
      if (number === undefined)
        throw new NodeRejection(
          -1,
          "getblockhash height\n\nReturns hash of block in best-block-chain at height provided.\n",
        );
      // Bitcoin Core 25+ names the argument (RPCHelpMan::HandleRequest, src/rpc/util.cpp)
      if (typeof number !== "number")
        throw new NodeRejection(
          -3,
          `Wrong type passed:\n{\n    "Position 1 (height)": "JSON value of type ${jsonType(number)} is not of expected type number"\n}`,
        );
      const at = number;
      if (at < 0 || at > height) throw new NodeRejection(-8, "Block height out of range");
      return at === 0 ? chain?.replace(/^0x/, "") : pad64(at + 0xbeef);
    },
  },
  // Stellar RPC (friendbotUrl only on networks that have a friendbot)
  getNetwork: {
    result: ({ chain }) => ({
      ...(chain?.startsWith("Test") ? { friendbotUrl: "https://friendbot.stellar.org/" } : {}),
      passphrase: chain,
      protocolVersion: 22,
    }),
  },
  // Ogmios v6: the Shelley genesis, whose network magic names the network
  "queryNetwork/genesisConfiguration": {
    result: ({ chain }) => ({
      era: "shelley",
      startTime: "2017-09-23T21:44:51Z",
      networkMagic: Number(chain),
      network: chain === "764824073" ? "mainnet" : "testnet",
      activeSlotsCoefficient: "1/20",
      securityParameter: 2160,
      epochLength: 432000,
      slotsPerKesPeriod: 129600,
      maxKesEvolutions: 62,
      slotLength: { milliseconds: 1000 },
      updateQuorum: 5,
      maxLovelaceSupply: 45000000000000000,
      initialDelegates: [],
      initialFunds: {},
      initialStakePools: { stakePools: {}, delegators: {} },
    }),
  },
  // Pathfinder, Juno: the chain id as a hex-encoded short string (SN_MAIN, SN_SEPOLIA)
  starknet_chainId: { result: ({ chain }) => chain },
  // CKB: the chain spec's name
  get_blockchain_info: {
    result: ({ chain, height }) => ({
      alerts: [],
      chain,
      difficulty: "0x1bd5bd1c6eaf2c0",
      epoch: hex(0x70806cb000000 + height),
      is_initial_block_download: false,
      median_time: hex(1_735_689_600_000),
    }),
  },
  // Thor: a block by revision; block 0 is the genesis block, whose id names the chain. A block it does not
  // have is 200 null.
  "GET /blocks/0": {
    result: ({ chain }) => ({
      number: 0,
      id: chain,
      size: 170,
      parentID: "0xffffffff00000000000000000000000000000000000000000000000000000000",
      timestamp: 1530316800,
      gasLimit: 10000000,
      beneficiary: "0x0000000000000000000000000000000000000000",
      gasUsed: 0,
      totalScore: 0,
      txsRoot: "0x45b0cfc220ceec5b7c1c62c4d4193d38e4eba48e8815729ce75f9c0ab0e4c1c0",
      txsFeatures: 0,
      stateRoot: "0x09bfdf9e24dd5cd5b63f3c1b5d58b97ff02ca0490214a021ed7d99b93867839c",
      receiptsRoot: "0x45b0cfc220ceec5b7c1c62c4d4193d38e4eba48e8815729ce75f9c0ab0e4c1c0",
      com: false,
      signer: "0x0000000000000000000000000000000000000000",
      isTrunk: true,
      isFinalized: true,
      transactions: [],
    }),
  },
  // NIS1: the node's network id, the signed network byte (104 mainnet, -104 testnet)
  "GET /node/info": {
    result: ({ chain }) => ({
      metaData: {
        features: 1,
        application: null,
        networkId: Number(chain),
        version: "0.6.101",
        platform: "Oracle Corporation (1.8.0_402) on Linux",
      },
      endpoint: { protocol: "http", port: 7890, host: "127.0.0.1" },
      identity: { name: "loopback", "public-key": "8".repeat(64) },
    }),
  },
  // algod: the suggested transaction parameters carry the genesis id and hash
  "GET /v2/transactions/params": {
    result: ({ chain, height }) => ({
      "consensus-version":
        "https://github.com/algorandfoundation/specs/tree/236dcc18c9c507d794813ab768e467ea42d1b4d9",
      fee: 0,
      "genesis-hash":
        chain === "mainnet-v1.0"
          ? "wGHE2Pwdvd7S12BL5FaOP20EGYesN73ktiC1qzkkit8="
          : "SGO1GKSzyE7IEPItTxCByw9x8FmnrCDexi9/cOUJOiI=",
      "genesis-id": chain,
      "last-round": height,
      "min-fee": 1000,
    }),
  },
  // java-tron: a block by number; the genesis block's id names the chain, and its JSON leaves out the
  // zero-valued number and timestamp. A block it does not have is {}.
  "POST /wallet/getblockbynum": {
    result: ({ chain, height }, body) => {
      const num = (body as { num?: unknown } | undefined)?.num ?? 0;
      if (typeof num !== "number" || num > height) return {};
      if (num === 0)
        return {
          blockID: chain,
          block_header: {
            raw_data: {
              txTrieRoot: "0".repeat(64),
              witness_address: "41206e65772073797374656d206d75737420616c6c6f77206578697374696e67",
              parentHash: "e58f33f9baf9305dc6f82b9f1934ea8f0ade2defb951258d50167028c780351f",
            },
          },
        };
      return {
        blockID: `${num.toString(16).padStart(16, "0")}${"9c".repeat(24)}`,
        block_header: { raw_data: { number: num, timestamp: 1_735_689_600_000 } },
      };
    },
  },
};

/**
 * Another chain's identity, as a node of it answers its interface's chain call: the chain an operator's
 * node is really on when it is pointed at the wrong label. The label's sibling where the registry has one
 * (a testnet's for a mainnet); these where it has none: each network's testnet or another network.
 */
export const OTHER_CHAINS = {
  /** BNB Smart Chain's chain id, for an EVM label */
  chainId: 56,
  /** Bitcoin's testnet3 genesis, for a Bitcoin label */
  btc: "000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943",
  /** VeChain's testnet genesis id */
  vet: "0x000000000b2bce3c70bc649a02749e8687721b09ed2e15997f466536b20bb127",
  /** NEM's testnet network id */
  nem: "-104",
  /** Algorand's testnet genesis id */
  algo: "testnet-v1.0",
} as const satisfies Record<string, string | number>;

/** What a node on another chain than `state` says: the label's sibling chain, or OTHER_CHAINS. */
export function otherChain(
  state: Pick<NodeState, "chainId" | "chain">,
  code: string,
  siblings: readonly (string | undefined)[],
): Pick<NodeState, "chainId" | "chain"> {
  const chainId = state.chainId === undefined ? undefined : state.chainId === 56 ? 1 : OTHER_CHAINS.chainId;
  const sibling = siblings.find((chain) => chain !== undefined && chain !== state.chain);
  const fallback = (OTHER_CHAINS as Record<string, string | number>)[code];
  const chain =
    state.chain === undefined
      ? undefined
      : (sibling ?? (fallback === undefined ? undefined : String(fallback)));
  return { chainId, chain };
}

export { hex };

// How a real node answers its interface's finality call (registry `reads.cache.finalized`), where the
// loopback nodes serve one, keyed like CHAIN_ANSWERS.
export const FINALITY_ANSWERS: Readonly<Record<string, TypicalAnswer>> = {
  // Substrate: GRANDPA's finalized head, a hash; GRANDPA finalizes a block or two behind the best one
  chain_getFinalizedHead: { result: ({ chain, height }) => substrateHash(chain, Math.max(0, height - 2)) },
  chain_getFinalisedHead: { result: ({ chain, height }) => substrateHash(chain, Math.max(0, height - 2)) },
  // java-tron: the solidity view's newest block, its solidified one (GetNowBlockOnSolidityServlet runs on
  // the solidified store): 19 of the 27 SRs have built on it, 19 below the head when none missed a slot
  "POST /walletsolidity/getnowblock": { result: ({ height }) => tronBlock(Math.max(0, height - 19)) },
};

/** A java-tron block as its getnowblock servlets write it (the head's in typical-calls.ts has this shape). */
export function tronBlock(num: number): unknown {
  return {
    blockID: `${num.toString(16).padStart(16, "0")}${"9c".repeat(24)}`,
    block_header: {
      raw_data: {
        number: num,
        txTrieRoot: "0".repeat(64),
        witness_address: "41b487cdc02de90f15ac89a68c82f44cbfe3d915ea",
        parentHash: `${(num - 1).toString(16).padStart(16, "0")}${"9c".repeat(24)}`,
        version: 31,
        timestamp: 1_735_689_600_000,
      },
      witness_signature: "ab".repeat(65),
    },
  };
}
