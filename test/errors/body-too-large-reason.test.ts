import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { rawRequest } from "../support/raw-http.js";

// docs/errors.md: BODY_TOO_LARGE's `data.reason` says what to do. It told every caller that "a batch may go
// as smaller batches": an algosdk caller posting a transaction to algod's REST route, or a nearcore caller
// (whose node takes no batch), has no batch to split. It says so only where the request may be a batch.

interface TooLarge {
  readonly message?: string;
  readonly error: {
    readonly code: string;
    readonly reason?: string;
    readonly data?: { readonly reason: string };
  };
}

describe("BODY_TOO_LARGE's reason names batches only where the request may be one", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  beforeAll(async () => {
    node = await startLoopbackNode(() => ({ body: {} }));
    gw = await startGateway({ upstreams: { eth: [node.url], algo: [node.url], near: [node.url] } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  // a declared length past the limit is refused before any of the body is sent
  const declared = async (label: string, path: string, type: string): Promise<TooLarge> => {
    const head = `POST ${path} HTTP/1.1\r\nHost: ${label}.gw.test\r\nContent-Type: ${type}\r\nContent-Length: ${8 * 1024 * 1024}\r\n\r\n`;
    const answer = await rawRequest(gw.port, head);
    expect(answer.status).toBe(413);
    return JSON.parse(answer.text) as TooLarge;
  };

  it("algod's transaction route (REST): no batch in the reason", async () => {
    const body = await declared("algo", `/${KEYS.all}/v2/transactions`, "application/x-binary");
    expect(body.error.code).toBe("BODY_TOO_LARGE");
    expect(body.error.reason).toMatch(/at most \d+ bytes/);
    expect(body.error.reason).not.toMatch(/batch/);
  });

  it("nearcore (no batches): no batch in the reason", async () => {
    const body = await declared("near", `/${KEYS.all}`, "application/json");
    expect(body.error.data?.reason).toMatch(/at most \d+ bytes/);
    expect(body.error.data?.reason).not.toMatch(/batch/);
  });

  it("an EVM JSON-RPC endpoint (batches): the reason says to split the batch", async () => {
    const body = await declared("eth", `/${KEYS.all}`, "application/json");
    expect(body.error.data?.reason).toMatch(/smaller batches/);
  });
});
