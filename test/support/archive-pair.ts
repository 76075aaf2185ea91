import { type Anvil, startAnvil } from "./anvil.js";
import { type RecordingNode, startRecordingNode } from "./recording-node.js";

/** The label's registry chainId: the prober serves only a node that answers it. */
const ETH_MAINNET = 1;

/**
 * A full node started with --prune-history and an archive node with the same blocks (real anvils), each
 * behind a recording node, so that a test sees which one was asked: `eth` and `eth-archive`'s upstreams.
 */
export interface ArchivePair {
  readonly full: Anvil;
  readonly archive: Anvil;
  readonly fullNode: RecordingNode;
  readonly archiveNode: RecordingNode;
  /** The upstreams of `eth` (the full node) and `eth-archive`. */
  readonly upstreams: Record<string, { url: string; name: string }[]>;
  stop(): Promise<void>;
}

export async function startArchivePair(blocks: number): Promise<ArchivePair> {
  const [full, archive] = await Promise.all([
    startAnvil({ pruned: true, chainId: ETH_MAINNET }),
    startAnvil({ chainId: ETH_MAINNET }),
  ]);
  const mined = `0x${blocks.toString(16)}`;
  await Promise.all([full.rpc("anvil_mine", [mined]), archive.rpc("anvil_mine", [mined])]);
  const [fullNode, archiveNode] = await Promise.all([
    startRecordingNode(full.url),
    startRecordingNode(archive.url),
  ]);
  return {
    full,
    archive,
    fullNode,
    archiveNode,
    upstreams: {
      eth: [{ url: fullNode.url, name: "full" }],
      "eth-archive": [{ url: archiveNode.url, name: "archive" }],
    },
    async stop() {
      await Promise.all([fullNode.close(), archiveNode.close()]);
      await Promise.all([full.stop(), archive.stop()]);
    },
  };
}
