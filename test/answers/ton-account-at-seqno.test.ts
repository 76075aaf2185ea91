import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { firstOf, type LoopbackNode, type SeenRequest, startLoopbackNode } from "../support/loopback-node.js";
import type { NodeState } from "../support/node-software.js";
import { nodeState, softwareNode } from "../support/software-node.js";
import type { TypicalAnswer } from "../support/typical-calls.js";

// What a user saw: an account read at an old masterchain `seqno` (getAddressBalance, runGetMethod, ...) or
// getTransactions paging back from an old `lt` never reached ton-archive: an archive key got the full
// liteserver's raw "LITE_SERVER_NOTREADY: cannot find block ... seqno not in db", and a key without archive
// access got it too instead of 403 ARCHIVE_REQUIRED. ton-http-api's account reads take an optional `seqno`:
// "Seqno of masterchain block at which moment the address information should be loaded" (toncenter/
// ton-http-api pyTON/main.py: getAddressInformation, getExtendedAddressInformation, getWalletInformation,
// getAddressBalance, getAddressState; runGetMethod's body too). tonlib looks the masterchain block up first,
// so a liteserver without the archive answers an old seqno with the same "seqno not in db" as
// getBlockHeader's; left out, the account is read at the head.
const WINDOW = 1_000;
const HEIGHT = 5_000_000;
const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;
const ADDRESS = "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N";

const ltNotInDb = (request: SeenRequest) =>
  request.body.includes('"method":"getTransactions"')
    ? {
        status: 500,
        body: {
          ok: false,
          error:
            "LITE_SERVER_UNKNOWN: cannot compute block with specified transaction: cannot find block (0,c25e8b92e48f9c50) lt=29142750000001: lt not in db",
          code: 500,
        },
      }
    : undefined;

const atSeqno = (pruned: boolean, result: unknown): TypicalAnswer => ({
  result: () => result,
  ...(pruned
    ? {
        missing: (state: NodeState, params?: unknown) => {
          const seqno = (params as { seqno?: unknown } | undefined)?.seqno;
          return seqno !== undefined && Number(seqno) < state.height - WINDOW;
        },
      }
    : {}),
});

describe("TON account reads at an old masterchain seqno (ton-http-api's `seqno` param)", () => {
  const nodes = new Map<string, LoopbackNode>();
  let gw: RunningGateway;
  const calls = (label: string, method: string) =>
    (nodes.get(label)?.requests ?? []).filter((r) => r.body.includes(`"method":"${method}"`)).length;
  const rpc = (key: string, method: string, params: unknown) =>
    gw.call("ton", `/${key}/jsonRPC`, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method, params }),
      headers: { "content-type": "application/json" },
    });

  beforeAll(async () => {
    for (const label of ["ton", "ton-archive"]) {
      const e = endpoint(label);
      const pruned = label === "ton";
      nodes.set(
        label,
        await startLoopbackNode(
          firstOf(
            pruned ? ltNotInDb : () => undefined,
            softwareNode(e, nodeState(e, HEIGHT), [""], {
              answers: {
                getAddressBalance: atSeqno(pruned, "123456789"),
                getTransactions: { result: () => [] },
                runGetMethod: atSeqno(pruned, {
                  "@type": "smc.runResult",
                  gas_used: 100,
                  stack: [["num", "0x2a"]],
                  exit_code: 0,
                }),
              },
            }),
          ),
        ),
      );
    }
    gw = await startGateway({
      upstreams: Object.fromEntries(
        [...nodes].map(([label, node]) => [label, [{ url: node.url, name: label }]]),
      ),
      health: { ...DEFAULT_HEALTH, probeIntervalMs: 100 },
    });
    await eventually(
      () => gw.gateway.upstreams.groups().every((g) => g.served.height === HEIGHT),
      5000,
      "every label's served head",
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...nodes.values()].map((node) => node.close()));
  });

  it("getAddressBalance at a seqno the full liteserver no longer keeps is answered by ton-archive for an archive key", async () => {
    const archive = calls("ton-archive", "getAddressBalance");
    const r = await rpc(KEYS.all, "getAddressBalance", { address: ADDRESS, seqno: HEIGHT - 5_000 });
    expect(r.text).not.toContain("not in db");
    expect(r.json).toMatchObject({ ok: true, result: "123456789" });
    expect(r.headers["x-upstream-tier"]).toBe("archive");
    // the interface's archive factor, as every interface with archive nodes has (docs/plans.md): 2 × 20 CU
    expect(r.headers["x-compute-units"]).toBe("40");
    expect(calls("ton-archive", "getAddressBalance")).toBe(archive + 1);
  });

  it("runGetMethod at an old seqno is answered by ton-archive for an archive key", async () => {
    const r = await rpc(KEYS.all, "runGetMethod", {
      address: ADDRESS,
      method: "seqno",
      stack: [],
      seqno: HEIGHT - 5_000,
    });
    expect(r.text).not.toContain("not in db");
    expect(r.json).toMatchObject({ ok: true, result: { exit_code: 0 } });
    expect(r.headers["x-upstream-tier"]).toBe("archive");
  });

  // getTransactions paging back past what the full liteserver keeps: tonlib's refusal as ton4j#93 and
  // toncenter/examples#3 quote it ("resolved after changing archival to true"), through ton-http-api's
  // TonlibException handler (HTTP 500, {"ok": false, "error", "code": 500})
  it("getTransactions from an old lt (archival: true) is answered by ton-archive for an archive key", async () => {
    const archive = calls("ton-archive", "getTransactions");
    const r = await rpc(KEYS.all, "getTransactions", {
      address: ADDRESS,
      lt: "29142750000001",
      hash: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
      limit: 10,
      archival: true,
    });
    expect(r.text).not.toContain("not in db");
    expect(r.json).toMatchObject({ ok: true, result: [] });
    expect(calls("ton-archive", "getTransactions")).toBe(archive + 1);
  });

  it("getAddressBalance without a seqno reads at the head, on the full liteserver", async () => {
    const archive = calls("ton-archive", "getAddressBalance");
    const r = await rpc(KEYS.noArchive, "getAddressBalance", { address: ADDRESS });
    expect(r.json).toMatchObject({ ok: true, result: "123456789" });
    expect(calls("ton-archive", "getAddressBalance")).toBe(archive);
  });

  it("a key without archive access gets ARCHIVE_REQUIRED naming ton-archive, not the liteserver's raw error", async () => {
    const r = await rpc(KEYS.noArchive, "getAddressBalance", { address: ADDRESS, seqno: HEIGHT - 5_000 });
    expect(r.text).not.toContain("not in db");
    expect(r.status).toBe(403);
    expect(r.text).toContain("ton-archive");
  });
});
