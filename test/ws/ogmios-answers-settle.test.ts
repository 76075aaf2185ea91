import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { DOMAIN, KEYS, type RunningGateway, rpcBody } from "../support/gateway.js";
import { type OgmiosGateway, ogmiosAsker, startOgmiosGateway } from "../support/ogmios-gateway.js";
import { type OgmiosNode, ogmiosEpoch } from "../support/ogmios-ws-node.js";
import { Client } from "../support/ws-client.js";

// Ogmios answers a call over its WebSocket with the call's method beside its id
// (`{"jsonrpc":"2.0","method":"nextBlock","result":…,"id":…}`, Ogmios/App/Protocol.hs). The gateway took an
// answer that names a method for a notification when it cleared the calls in flight on a connection: the
// client had its answer, but the call stayed in flight for good. A chain-sync client's 101st nextBlock was
// refused TOO_MANY_IN_FLIGHT (limits.ws.maxInFlight, 100), and an HTTP caller's query identical to a
// connection's waited on it the 10 s a follower waits at most, then asked the node itself; and since a
// message is counted once its call is answered, none was counted: the key's usage and compute units never
// grew (its quota never applied).

const HEIGHT = 11_000_000;

describe("Ogmios over a WebSocket: each answered call leaves the calls in flight", () => {
  let node: OgmiosNode;
  let gw: RunningGateway;
  let ogmios: OgmiosGateway;
  beforeAll(async () => {
    ogmios = await startOgmiosGateway(HEIGHT);
    ({ node, gw } = ogmios);
  });
  afterAll(() => ogmios?.close());

  const ask = ogmiosAsker();

  it("a chain follower's nextBlock after a hundred is answered", async () => {
    const client = await Client.open(`ws://ada.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      for (let i = 0; i < 105; i++) {
        const answer = await ask(client, "nextBlock");
        expect(answer.error, `nextBlock #${i + 1}`).toBeUndefined();
      }
    } finally {
      client.close();
    }
  });

  it("each answered call is counted, at its compute units", async () => {
    const client = await Client.open(`ws://ada.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const before = await gw.metric("gateway_compute_units_total", { label: "ada" });
      for (let i = 0; i < 3; i++) await ask(client, "nextBlock");
      await eventually(
        async () => (await gw.metric("gateway_compute_units_total", { label: "ada" })) === before + 60,
        3_000,
        "three nextBlock calls at Ogmios' 20 compute units each counted",
      );
    } finally {
      client.close();
    }
  });

  it("an HTTP caller waiting on a connection's identical query gets its answer once the node gave it", async () => {
    let release = () => {};
    node.hold("queryLedgerState/epoch", new Promise<void>((resolve) => (release = resolve)));
    const client = await Client.open(`ws://ada.${DOMAIN}:${gw.port}/${KEYS.all}`);
    try {
      const onSocket = ask(client, "queryLedgerState/epoch");
      await eventually(
        () => node.wsMessages.some((m) => m.includes("queryLedgerState/epoch")),
        3_000,
        "the connection's query at the node",
      );
      const overHttp = gw.call("ada", `/${KEYS.noArchive}`, {
        body: rpcBody("queryLedgerState/epoch", {}, 1),
      });
      await eventually(
        async () => (await gw.metric("gateway_cache_waiting", { label: "ada" })) >= 1,
        3_000,
        "the HTTP call waiting on it",
      );
      release();
      expect((await onSocket).result).toBe(ogmiosEpoch(HEIGHT));
      const answer = await overHttp;
      expect((answer.json as { result: unknown }).result).toBe(ogmiosEpoch(HEIGHT));
      expect(answer.headers["x-cache"]).toBe("coalesced");
      expect(node.requests.filter((r) => r.body.includes("queryLedgerState/epoch"))).toHaveLength(0);
    } finally {
      client.close();
    }
  });
});
