import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Wallet } from "ethers";
import { request } from "undici";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import { type Anvil, startAnvil } from "../support/anvil.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { readSeen } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";

// A write whose node began its answer (status and headers) and then broke off: the connection reset in the
// middle of the body, or the body stalled (a node, or the balancer in front of it, that died half-way
// through, or a network cut). The node had the write: it must never go to another node, and the caller must
// be told WRITE_NOT_CONFIRMED (docs/upstreams.md, "Retries: reads and writes"), not a generic bad answer, nor
// UPSTREAM_TIMEOUT, which docs/errors.md gives a write that reached no node ("it may be sent again"). Two
// real anvils of chain 1 behind a front of the test's own, which passes each request to its anvil and the
// anvil's answer back, and breaks the answer to a write off half-way when told to.

// anvil's first dev account
const DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const TO = `0x${"ab".repeat(20)}`;

type Break = "none" | "reset" | "stall";

interface Front {
  readonly url: string;
  /** The writes the front passed to its anvil. */
  writes: number;
  /** What it does with the next answer to a write, after its headers and half its body. */
  breaks: Break;
  close(): Promise<void>;
}

async function startFront(anvil: Anvil): Promise<Front> {
  const front: Front = { url: "", writes: 0, breaks: "none", close: async () => {} };
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const seen = await readSeen(req);
    const write = seen.body.includes("eth_sendRawTransaction");
    if (write) front.writes += 1;
    const answer = await request(anvil.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: seen.body,
    });
    const body = Buffer.from(await answer.body.arrayBuffer());
    const breaks = write ? front.breaks : "none";
    res.writeHead(answer.statusCode, {
      "content-type": "application/json",
      "content-length": String(body.length),
    });
    if (breaks === "none") {
      res.end(body);
      return;
    }
    res.write(body.subarray(0, body.length >> 1));
    if (breaks === "reset") setTimeout(() => req.socket.resetAndDestroy(), 20);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(front, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}

function payment(nonce: number): Promise<string> {
  return new Wallet(DEV_KEY).signTransaction({
    to: TO,
    value: 1n,
    nonce,
    gasLimit: 21_000n,
    maxFeePerGas: 10n ** 10n,
    maxPriorityFeePerGas: 1n,
    chainId: 1n,
    type: 2,
  });
}

describe("a write whose node broke its answer off half-way", () => {
  let anvils: Anvil[];
  let fronts: Front[];
  let gw: RunningGateway;
  let nonce = 0;

  beforeAll(async () => {
    anvils = await Promise.all([startAnvil({ chainId: 1 }), startAnvil({ chainId: 1 })]);
    fronts = await Promise.all(anvils.map((anvil) => startFront(anvil)));
    gw = await startGateway({
      upstreams: {
        eth: [
          { url: fronts[0]?.url as string, name: "a" },
          { url: fronts[1]?.url as string, name: "b", tier: "fallback" },
        ],
      },
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
      limits: { upstream: { ...DEFAULT_LIMITS.upstream, bodyTimeoutMs: 500 } },
    });
    await everyNodeInRotation(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all((fronts ?? []).map((front) => front.close()));
    await Promise.all((anvils ?? []).map((anvil) => anvil.stop()));
  });
  beforeEach(() => {
    for (const front of fronts) {
      front.writes = 0;
      front.breaks = "none";
    }
  });

  const send = async (body: string) => {
    const response = await request(`${gw.origin}/${KEYS.all}/`, {
      method: "POST",
      headers: { host: "eth.gw.test", "content-type": "application/json" },
      body,
    });
    return { status: response.statusCode, text: await response.body.text() };
  };
  const single = async (id: number) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "eth_sendRawTransaction",
      params: [await payment(nonce++)],
    });
  const withBlockByHash = async (id: number) => {
    const genesis = await anvils[0]?.rpc<{ hash: string }>("eth_getBlockByNumber", ["0x0", false]);
    return JSON.stringify([
      { jsonrpc: "2.0", id, method: "eth_sendRawTransaction", params: [await payment(nonce++)] },
      { jsonrpc: "2.0", id: id + 1, method: "eth_getBlockByHash", params: [genesis?.hash, false] },
    ]);
  };
  // whichever node is first (one that broke an earlier answer may be out of rotation): each breaks it
  const breakAll = (how: Break) => {
    for (const front of fronts) front.breaks = how;
  };
  const writes = () => fronts.reduce((sum, front) => sum + front.writes, 0);
  const unconfirmed = (text: string) => expect(text).toContain("WRITE_NOT_CONFIRMED");

  it("a single write, the connection reset mid-body: WRITE_NOT_CONFIRMED, the write at one node once", async () => {
    breakAll("reset");
    const answer = await send(await single(1)).catch((error: unknown) => ({
      status: 0,
      text: String(error),
    }));
    expect(writes()).toBe(1);
    expect(answer.status, answer.text).toBe(502);
    unconfirmed(answer.text);
  });

  it("a single write whose body stalls: WRITE_NOT_CONFIRMED", async () => {
    breakAll("stall");
    const answer = await send(await single(3)).catch((error: unknown) => ({
      status: 0,
      text: String(error),
    }));
    expect(writes()).toBe(1);
    expect(answer.status, answer.text).toBe(502);
    unconfirmed(answer.text);
  });

  it("a batch of a write and a block by hash (read whole), reset mid-body: WRITE_NOT_CONFIRMED", async () => {
    breakAll("reset");
    const answer = await send(await withBlockByHash(5));
    expect(writes()).toBe(1);
    expect(answer.status, answer.text).toBe(502);
    unconfirmed(answer.text);
  });

  it("the same batch, its body stalled: WRITE_NOT_CONFIRMED, not UPSTREAM_TIMEOUT ('it may be sent again')", async () => {
    breakAll("stall");
    const answer = await send(await withBlockByHash(7));
    expect(writes()).toBe(1);
    expect(answer.status, answer.text).toBe(502);
    unconfirmed(answer.text);
  });
});
