import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOMAIN, KEYS, type RunningGateway, rpcBody } from "../support/gateway.js";
import { type OgmiosGateway, ogmiosAsker, startOgmiosGateway } from "../support/ogmios-gateway.js";
import { ogmiosEpoch, ogmiosPoint } from "../support/ogmios-ws-node.js";
import { Client } from "../support/ws-client.js";

// Ogmios' local-state-query protocol over a WebSocket: `acquireLedgerState {point}` makes every
// `queryLedgerState/*` on that connection answer at the acquired point until `releaseLedgerState` (Ogmios
// App/Protocol/StateQuery.hs); with none acquired a query reads the tip, as every one over HTTP does. The
// gateway keeps `queryLedgerState/*` answers while the head stays (registry `cache.atHead`), as the tip's:
// a connection's answer at its old point was kept and given to every other caller as the tip's (an HTTP
// caller read a ledger tip 50,000 blocks back, from the cache), and the connection was given the tip's kept
// answer for its acquired point.

const HEIGHT = 11_000_000;
const OLD = HEIGHT - 50_000;

describe("Ogmios: a connection that acquired an old ledger state", () => {
  let gw: RunningGateway;
  let ogmios: OgmiosGateway;
  beforeAll(async () => {
    ogmios = await startOgmiosGateway(HEIGHT);
    ({ gw } = ogmios);
  });
  afterAll(() => ogmios?.close());

  const ask = ogmiosAsker();
  const overHttp = async (method: string) => {
    const answer = await gw.call("ada", `/${KEYS.all}`, { body: rpcBody(method, {}, 1) });
    return { result: (answer.json as { result: unknown }).result, cache: answer.headers["x-cache"] };
  };
  const acquired = async (client: Client) =>
    expect((await ask(client, "acquireLedgerState", { point: ogmiosPoint(OLD) })).result).toEqual({
      acquired: "ledgerState",
      point: ogmiosPoint(OLD),
    });

  it("its answer at its old point is not kept as the tip's for other callers", async () => {
    const client = await Client.open(`ws://ada.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      await acquired(client);
      expect((await ask(client, "queryLedgerState/tip")).result).toEqual(ogmiosPoint(OLD));
      expect((await overHttp("queryLedgerState/tip")).result).toEqual(ogmiosPoint(HEIGHT));
    } finally {
      client.close();
    }
  });

  it("it is not given the tip's kept answer", async () => {
    expect((await overHttp("queryLedgerState/epoch")).result).toBe(ogmiosEpoch(HEIGHT));
    expect((await overHttp("queryLedgerState/epoch")).cache).toBe("hit");
    const client = await Client.open(`ws://ada.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      await acquired(client);
      expect((await ask(client, "queryLedgerState/epoch")).result).toBe(ogmiosEpoch(OLD));
    } finally {
      client.close();
    }
  });
});
