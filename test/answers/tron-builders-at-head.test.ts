import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS, type RunningGateway } from "../support/gateway.js";
import { type NodesBlockApart, nodesBlockApart, softwareWith } from "../support/nodes-block-apart.js";

// TronWeb's transactionBuilder.sendTrx: POST /wallet/createtransaction, which java-tron builds only once the
// transfer validates on the state at its head (tronprotocol/java-tron framework Wallet.createTransactionCapsule:
// the contract's actuators' validate(), for every contract but a deploy and a trigger;
// actuator TransferActuator.validate: "Validate TransferContract error, balance is not sufficient."), and
// answers a refusal as CreateTransactionServlet's Util.processError does, 200 {"Error": "class … : …"}.
// A caller that saw the head block credit the sender (its getaccount reads at the head) built the transfer
// on the node a block behind, where the TRX was not there yet. Here the sender is credited in block H + 1.

const H = 9_000_000;
const OWNER = "41".padEnd(42, "7");
const TO = "41".padEnd(42, "8");

describe("TRON transaction builders through two java-tron nodes a block apart", () => {
  let apart: NodesBlockApart | undefined;
  let gw: RunningGateway;
  beforeAll(async () => {
    apart = await nodesBlockApart(
      "trx",
      H,
      softwareWith({
        "POST /wallet/createtransaction": {
          result: ({ height }) => {
            if (height <= H)
              return {
                Error:
                  "class org.tron.core.exception.ContractValidateException : Validate TransferContract error, balance is not sufficient.",
              };
            return {
              visible: false,
              txID: "ab".repeat(32),
              raw_data: {
                contract: [
                  {
                    parameter: {
                      value: { amount: 1_000_000, owner_address: OWNER, to_address: TO },
                      type_url: "type.googleapis.com/protocol.TransferContract",
                    },
                    type: "TransferContract",
                  },
                ],
                ref_block_bytes: (height & 0xffff).toString(16).padStart(4, "0"),
                ref_block_hash: "cd".repeat(8),
                expiration: 1_764_000_060_000,
                timestamp: 1_764_000_000_000,
              },
              raw_data_hex: "0a02",
            };
          },
        },
      }),
    );
    gw = apart.gw;
  });
  afterAll(() => apart?.close());

  const post = async (path: string, body: unknown) =>
    (await gw.call("trx", `/${KEYS.all}${path}`, { body: JSON.stringify(body) })).json as Record<
      string,
      unknown
    >;

  it("a transfer built after the head was read is built on the head's state, never refused on the state before", async () => {
    const got: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const head = (await post("/wallet/getnowblock", {})) as {
        block_header?: { raw_data: { number: number } };
      };
      expect(head.block_header?.raw_data.number).toBe(H + 1);
      const built = await post("/wallet/createtransaction", {
        owner_address: OWNER,
        to_address: TO,
        amount: 1_000_000,
      });
      got.push(built.Error ?? built.txID);
    }
    expect(got).toEqual(got.map(() => "ab".repeat(32)));
  });
});
