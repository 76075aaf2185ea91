import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { type ArchivePair, startArchivePair } from "../support/archive-pair.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A user's batch, by a key with archive access, read state older than a full node keeps under an integer id
// past 2^53 (9007199254740993): the archive node's answer came back under another id (…992), and with the
// cache on it was left out of the batch's answer altogether, its id no longer the call's. The full node (a
// real anvil started with --prune-history) refuses the read, the archive node (a real anvil with the same
// blocks) answers it (docs/upstreams.md, "Archive"); anvil reads the id as a u64 and writes it back exactly,
// and so must the gateway (src/jsonrpc/id-key.ts: "an integer keeps its digits, past 2^53 too").
const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const BIG = "9007199254740993"; // 2^53 + 1

describe.each([
  ["without the cache", false],
  ["with the cache", true],
])(
  "a batch's old-state read answered by the archive node, with an id past 2^53 (real anvils, %s)",
  (_, cache) => {
    let pair: ArchivePair;
    let gw: RunningGateway;

    beforeAll(async () => {
      pair = await startArchivePair(300);
      gw = await startGateway({
        upstreams: pair.upstreams,
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
        cache: { ...DEFAULT_CACHE, enabled: cache },
      });
      await everyNodeInRotation(gw);
      await eventually(
        async () => (await gw.metric("gateway_upstream_head", { label: "eth" })) === 300,
        5000,
        "head",
      );
    });
    afterAll(async () => {
      await gw?.close();
      await pair?.stop();
    });

    it("the archive node's answer carries the caller's id exactly, as each anvil writes it", async () => {
      const body = `[{"jsonrpc":"2.0","id":${BIG},"method":"eth_getBalance","params":["${ACCOUNT}","0xa"]},{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]}]`;
      // each anvil writes the id back exactly (the archive one with the balance, the pruned one with its refusal)
      for (const node of [pair.archive, pair.full]) {
        const direct = await fetch(node.url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        expect(await direct.text()).toContain(`"id":${BIG}`);
      }
      const answer = await gw.call("eth", `/${KEYS.all}`, { body });
      expect(answer.status).toBe(200);
      // the archive tier answered it
      expect(pair.archiveNode.calls.some((c) => c.method === "eth_getBalance")).toBe(true);
      expect(answer.text).toContain(`"id":${BIG},"result":"0x`);
    });
  },
);
