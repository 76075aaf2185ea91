import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";

// The code that reads a node's answer runs in the upstream call's completion, inside undici's response
// handler, which swallows what it throws: a bug there left the caller with no answer and no log line until
// its socket's idle timeout cut the connection. Such a bug must end that request as INTERNAL, logged at
// error with its request id, with its access line, and the gateway go on.

async function node(): Promise<Server> {
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      const calls = JSON.parse(text) as { id: unknown; method: string } | { id: unknown; method: string }[];
      const one = (call: { id: unknown; method: string }) => {
        const id = JSON.stringify(call.id);
        if (call.method === "eth_chainId") return `{"jsonrpc":"2.0","id":${id},"result":"0x1"}`;
        if (call.method === "eth_blockNumber") return `{"jsonrpc":"2.0","id":${id},"result":"0x10000"}`;
        if (call.method === "eth_getBlockByNumber")
          return `{"jsonrpc":"2.0","id":${id},"result":{"number":"0x10000","hash":"0x${"1".repeat(64)}","parentHash":"0x${"2".repeat(64)}","timestamp":"0x1"}}`;
        return `{"jsonrpc":"2.0","id":${id},"result":"0x5"}`;
      };
      const body = Array.isArray(calls) ? `[${calls.map(one).join(",")}]` : one(calls);
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

describe.each([
  ["", false],
  [", through the answer cache", true],
])("a bug thrown where a node's answer read whole is read%s", (_, cache) => {
  let nodes: Server[];
  let gw: RunningGateway;
  /** CallRun's prototype, imported once the gateway is (call-run.ts first would meet an import cycle). */
  let runs: { judgeWrite(): void };

  beforeAll(async () => {
    nodes = await Promise.all([node(), node()]);
    gw = await startGateway({
      upstreams: {
        eth: nodes.map((n, i) => ({
          url: `http://127.0.0.1:${(n.address() as AddressInfo).port}`,
          name: `n${i}`,
        })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
      // cached reads go to a node as calls shared by identical reads (src/cache/): theirs end as well
      cache: { ...DEFAULT_CACHE, enabled: cache },
    });
    await everyNodeInRotation(gw, "eth");
    runs = (await import("../../src/upstream/call-run.js")).CallRun.prototype as unknown as typeof runs;
  });
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    await gw?.close();
    for (const n of nodes ?? []) {
      n.closeAllConnections();
      n.close();
    }
  });

  /** The next answers read whole (policy.ts WholeRun) throw as they are judged. */
  const breakTheReader = () =>
    vi.spyOn(runs, "judgeWrite").mockImplementation(() => {
      throw new Error("a bug in the answer's reader");
    });

  const ask = (body: unknown) =>
    Promise.race([
      gw.call("eth", `/${KEYS.all}`, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no answer within 5 s")), 5000)),
    ]);

  /** INTERNAL, the bug logged at error with the request's id and stack, and the access line written. */
  const endedAsBug = (answer: Awaited<ReturnType<typeof ask>>) => {
    expect(answer.status).toBe(500);
    expect(answer.text).toContain("-32603");
    const id = answer.headers["x-request-id"] as string;
    const bug = gw.logs.find((l) => l.includes('"msg":"unhandled"') && l.includes(`"requestId":"${id}"`));
    expect(bug).toContain('"level":"error"');
    expect(bug).toContain("a bug in the answer's reader");
    const access = gw.logs.find((l) => l.includes('"msg":"request"') && l.includes(`"requestId":"${id}"`));
    expect(access).toContain('"error":"INTERNAL"');
  };

  it("a read at a numbered block (read whole, by tier): the caller gets INTERNAL", async () => {
    breakTheReader();
    const balance = {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getBalance",
      params: ["0x0000000000000000000000000000000000000001", "0xfff0"],
    };
    endedAsBug(await ask(balance));
  });

  it("a partial batch (read whole and merged): the caller gets INTERNAL", async () => {
    breakTheReader();
    const batch = [
      { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
      { jsonrpc: "2.0", id: 2, method: "admin_peers", params: [] },
    ];
    endedAsBug(await ask(batch));
  });

  it("a batch of reads at numbered blocks: the caller gets INTERNAL", async () => {
    breakTheReader();
    const batch = [0, 1].map((n) => ({
      jsonrpc: "2.0",
      id: n,
      method: "eth_getBalance",
      params: [`0x000000000000000000000000000000000000000${n + 2}`, "0xfff0"],
    }));
    endedAsBug(await ask(batch));
  });

  it("the gateway goes on serving", async () => {
    const balance = {
      jsonrpc: "2.0",
      id: 3,
      method: "eth_getBalance",
      params: ["0x0000000000000000000000000000000000000001", "0xfff1"],
    };
    expect((await ask(balance)).json).toMatchObject({ result: "0x5" });
  });
});
