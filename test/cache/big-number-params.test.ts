import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { HEIGHT, type NodeForMount, startNodeFor } from "../support/sdk-nodes.js";
import { nodeState } from "../support/software-node.js";

// A call's params past JavaScript's safe integers (2^53) name what the node reads exactly: ton-http-api
// reads its params with Python's json (pyTON/models.py: `after_lt: Optional[int]`, arbitrary precision),
// and a transaction's logical time is such a number (toncenter answers lt as text, and a Python client
// pages a block's transactions sending it back as an int). Two such calls a double cannot tell apart are
// two calls: the cache keeps neither under the other's key, and neither waits on the other's answer.

const MASTER_SHARD = "-9223372036854775808";
const SEQNO = HEIGHT - 10;
/** Two logical times of one account's transactions in one block: one double (4.7e16's step is 8). */
const LTS = ["47000000000000001", "47000000000000003"];
const ACCOUNT_HASH = "u+DvvQ8QLh6h0X8wCLQlvr7IsR9MH3GZXTtvJm5mP6A=";

describe("params past the safe integers", () => {
  let ton: Endpoint;
  let node: NodeForMount;
  let gw: RunningGateway;

  beforeAll(async () => {
    ton = endpointsByLabel.get("ton") as Endpoint;
    const mount = ton.mounts[0];
    if (mount === undefined) throw new Error("ton has no mount");
    node = await startNodeFor(ton, mount, nodeState(ton, HEIGHT), {
      // ton-http-api's getBlockTransactions: tonlib's blocks.transactions after the (lt, hash) given
      getBlockTransactions: {
        result: (_state, params) => {
          const { workchain, shard, seqno } = params as { workchain: number; shard: string; seqno: number };
          return {
            "@type": "blocks.transactions",
            id: {
              "@type": "ton.blockIdExt",
              workchain,
              shard,
              seqno,
              root_hash: "cm9vdA==",
              file_hash: "ZmlsZQ==",
            },
            req_count: 1,
            incomplete: true,
            transactions: [],
          };
        },
      },
    });
    gw = await startGateway({
      upstreams: { ton: [node.upstream] },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      cache: { ...DEFAULT_CACHE, headMaxAgeMs: 10_000 },
    });
    await everyNodeInRotation(gw, "ton", 4_000);
  });
  afterAll(async () => {
    await gw?.close();
    await node?.node.close();
  });

  /** The page of the masterchain block's transactions after `lt`, sent as a JSON number. */
  async function page(lt: string, id: number) {
    const body = `{"jsonrpc":"2.0","id":${id},"method":"getBlockTransactions","params":{"workchain":-1,"shard":"${MASTER_SHARD}","seqno":${SEQNO},"count":1,"after_lt":${lt},"after_hash":"${ACCOUNT_HASH}"}}`;
    const answer = await gw.call("ton", `/${KEYS.all}`, {
      body,
      headers: { "content-type": "application/json" },
    });
    expect(answer.status, answer.text).toBe(200);
    return answer.headers["x-cache"];
  }

  const asked = (lt: string) =>
    node.node.requests.filter((r) => r.body.includes("getBlockTransactions") && r.body.includes(`:${lt},`))
      .length;

  it("two pages whose after_lt a double cannot tell apart each reach the node", async () => {
    // a page after a logical time a double holds exactly is final (a masterchain block below the head): kept
    expect(await page("4700000000000001", 1)).toBe("miss");
    expect(await page("4700000000000001", 2)).toBe("hit");
    // one past the safe integers is the node's to read: the next page is not answered with the first
    expect(await page(LTS[0] as string, 3)).not.toBe("hit");
    expect(await page(LTS[1] as string, 4)).not.toBe("hit");
    expect(asked(LTS[0] as string)).toBe(1);
    expect(asked(LTS[1] as string)).toBe(1);
  });

  it("nor does one wait on the other's answer in flight", async () => {
    const lts = ["47000000000000009", "47000000000000011"];
    await Promise.all(lts.map((lt, i) => page(lt, 10 + i)));
    for (const lt of lts) expect(asked(lt)).toBe(1);
  });
});
