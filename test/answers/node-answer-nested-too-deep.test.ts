import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import { nestsDeeperThan } from "../../src/jsonrpc/scan.js";
import { MAX_ANSWER_DEPTH } from "../../src/upstream/policy.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A node's answer nested 100,000 deep is 200 to 600 KB, far under the answer size cap. JSON.parse reads it
// (V8 parses iteratively); JSON.stringify of what it gives, and any recursive walk, throws RangeError. The
// answers the gateway reads whole and walks (a split range's lists, a node's error it searches for "no
// state") must be refused as the node's broken answer, UPSTREAM_BAD_RESPONSE, not leave the caller waiting
// with no answer and no log line until its socket's idle timeout.

const DEEP = 100_000;
const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const nestedObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

/** What the nodes answer eth_getLogs and eth_getBalance with. */
let logs = "";
let balance = "";

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
        if (call.method === "eth_getLogs") return `{"jsonrpc":"2.0","id":${id},${logs}}`;
        if (call.method === "eth_getBalance") return `{"jsonrpc":"2.0","id":${id},${balance}}`;
        if (call.method === "eth_getBlockByNumber")
          return `{"jsonrpc":"2.0","id":${id},"result":{"number":"0x10000","hash":"0x${"1".repeat(64)}","parentHash":"0x${"2".repeat(64)}","timestamp":"0x1"}}`;
        return `{"jsonrpc":"2.0","id":${id},"result":null}`;
      };
      const body = Array.isArray(calls) ? `[${calls.map(one).join(",")}]` : one(calls);
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

describe("a node's answer nested too deep to walk", () => {
  let nodes: Server[];
  let gw: RunningGateway;
  const uncaught: unknown[] = [];
  const onUncaught = (e: unknown) => uncaught.push(e);

  beforeAll(async () => {
    process.on("uncaughtException", onUncaught);
    nodes = await Promise.all([node(), node()]);
    gw = await startGateway({
      upstreams: {
        eth: nodes.map((n, i) => ({
          url: `http://127.0.0.1:${(n.address() as AddressInfo).port}`,
          name: `n${i}`,
        })),
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await everyNodeInRotation(gw, "eth");
  });
  afterAll(async () => {
    process.off("uncaughtException", onUncaught);
    await gw?.close();
    for (const n of nodes ?? []) {
      n.closeAllConnections();
      n.close();
    }
  });

  /** The call's answer, which must come well before the socket's idle timeout would cut the connection. */
  const ask = (method: string, params: unknown) =>
    Promise.race([
      gw.call("eth", `/${KEYS.all}`, {
        method: "POST",
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
        headers: { "content-type": "application/json" },
      }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no answer within 5 s")), 5000)),
    ]);
  const wideLogs = () => ask("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x1000" }]);

  /** The caller got the node's broken answer as the gateway's 502, and the access line says so. */
  const refusedAsBroken = (answer: Awaited<ReturnType<typeof ask>>) => {
    expect(answer.status).toBe(502);
    expect((answer.json as { error: { code: number } }).error.code).toBe(-32013);
    const id = answer.headers["x-request-id"] as string;
    const line = gw.logs.find((l) => l.includes('"msg":"request"') && l.includes(`"requestId":"${id}"`));
    expect(line).toContain('"error":"UPSTREAM_BAD_RESPONSE"');
    expect(uncaught).toEqual([]);
  };

  it("a split range's sub-range result nested 100,000 deep: UPSTREAM_BAD_RESPONSE", async () => {
    logs = `"result":[${nested(DEEP)}]`;
    refusedAsBroken(await wideLogs());
  });

  it("a split range's sub-range error nested 100,000 deep: UPSTREAM_BAD_RESPONSE", async () => {
    logs = `"error":{"code":-32000,"message":"x","data":${nestedObject(DEEP)}}`;
    refusedAsBroken(await wideLogs());
  });

  it("a read at a numbered block whose node error nests 100,000 deep: UPSTREAM_BAD_RESPONSE", async () => {
    balance = `"error":{"code":-32000,"message":"x","data":${nestedObject(DEEP)}}`;
    refusedAsBroken(await ask("eth_getBalance", ["0x0000000000000000000000000000000000000001", "0xfff0"]));
  });

  it("an answer just under the bound goes out whole, split and merged", async () => {
    const deepest = nested(MAX_ANSWER_DEPTH - 3);
    logs = `"result":[${deepest}]`;
    const answer = await wideLogs();
    expect(answer.status).toBe(200);
    const result = answer.text.slice(answer.text.indexOf('"result":') + 9, -1);
    // one list per sub-range of 2,000 blocks: 0x1..0x1000 is three
    expect(result).toBe(`[${deepest},${deepest},${deepest}]`);
    balance = `"error":{"code":-32000,"message":"x","data":${nestedObject(MAX_ANSWER_DEPTH - 3)}}`;
    const refused = await ask("eth_getBalance", ["0x0000000000000000000000000000000000000001", "0xfff0"]);
    expect(refused.text).toContain(nestedObject(MAX_ANSWER_DEPTH - 3));
  });

  it("the gateway goes on serving", async () => {
    const answer = await ask("eth_chainId", []);
    expect(answer.json).toMatchObject({ result: "0x1" });
    expect(uncaught).toEqual([]);
  });
});

describe("nestsDeeperThan", () => {
  it("counts arrays and objects, not brackets in strings", () => {
    expect(nestsDeeperThan(`${nested(5)}`, 5)).toBe(false);
    expect(nestsDeeperThan(`${nested(6)}`, 5)).toBe(true);
    expect(nestsDeeperThan(`{"a":"[[[[[[[[","b":[{"c":"\\"{{{{{{{{"}]}`, 3)).toBe(false);
    expect(nestsDeeperThan(`[[1],[2],[3],[4],[5],[6],[7]]`, 2)).toBe(false);
  });
});
