// A key locked to its contracts on the families beyond EVM and TRON where the registry says a call names one
// (docs/plans.md, "Key settings"): Starknet's JSON-RPC, positional or by name, an address with its leading
// zeros or without; VeChain's REST routes, by a path's address or a body's clauses and criteria.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { StaticKey } from "../../src/config/types.js";
import type { Endpoint } from "../../src/registry/types.js";
import { type RunningGateway, startGateway, TEST_KEYS } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { everyNodeInRotation } from "../support/rotation.js";
import { nodeState, softwareNode } from "../support/software-node.js";

// an ERC-20 on Starknet (a field element: starknet.js pads it to 64 digits, explorers show it without zeros)
const TOKEN = "0x049d36570d4e46f48e99674bd3fcc84644ddd6b96f7c741b1562b82f9e004dc7";
const TOKEN_SHORT = "0x49d36570d4e46f48e99674bd3fcc84644ddd6b96f7c741b1562b82f9e004dc7";
const OTHER = "0x04718f5a0fc34cc1af16a1cdee98ffb20c31f5cd61d6ab07201858f4287c938d";
// VTHO's contract on VeChain, listed in its EIP-55 case; Thor's clients send it in lower case
const VTHO = "0x0000000000000000000000000000456E65726779";
const VTHO_LOWER = VTHO.toLowerCase();
const STRANGER = "0x1111111111111111111111111111111111111111";

const LOCKED = "FNlockedStarknetVechain0000000";
const LOCKED_DEDICATED = "FNdedicatedLocked0000000000000";
const KEYS_LOCKED: StaticKey[] = [
  {
    key: LOCKED,
    networks: "*",
    rate: { perSecond: 1000, burst: 1000 },
    settings: { contracts: [TOKEN, VTHO] },
  },
  {
    key: LOCKED_DEDICATED,
    networks: "*",
    plan: "dedicated",
    rate: { perSecond: 1000, burst: 1000 },
    settings: { contracts: [TOKEN_SHORT] },
  },
];

const endpoint = (label: string) => endpointsByLabel.get(label) as Endpoint;

describe("a key locked to its contracts on Starknet and VeChain", () => {
  let starknet: LoopbackNode;
  let vechain: LoopbackNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    const start = (label: string) =>
      startLoopbackNode(softwareNode(endpoint(label), nodeState(endpoint(label), 1_000_000)));
    [starknet, vechain] = await Promise.all([start("starknet"), start("vet")]);
    gw = await startGateway({
      upstreams: { starknet: [starknet.url], vet: [vechain.url] },
      keys: [...TEST_KEYS, ...KEYS_LOCKED],
    });
    await Promise.all([everyNodeInRotation(gw, "starknet", 4_000), everyNodeInRotation(gw, "vet", 4_000)]);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([starknet?.close(), vechain?.close()]);
  });

  /** Whether the gateway refused the call for its contracts (403 KEY_SETTING_REFUSED), and the node never saw it. */
  const refusedFor = async (node: LoopbackNode, answer: Promise<{ status: number; text: string }>) => {
    const before = node.requests.length;
    const { status, text } = await answer;
    const refused = status === 403 && text.includes("KEY_SETTING_REFUSED") && text.includes("contracts");
    if (refused) expect(node.requests.length).toBe(before);
    return refused;
  };
  const starknetCall = (key: string, method: string, params: unknown) =>
    refusedFor(
      starknet,
      gw.call("starknet", `/${key}/`, { body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) }),
    );

  it("Starknet: a call's contract, by place or by name, with its leading zeros or without", async () => {
    const request = (contract: string) => ({
      contract_address: contract,
      entry_point_selector: "0x2e4263afad30923c891518314c3c95dbe830a16874e8abc5777a9a20b54c76e",
      calldata: [],
    });
    for (const contract of [TOKEN, TOKEN_SHORT]) {
      expect(await starknetCall(LOCKED, "starknet_call", [request(contract), "latest"])).toBe(false);
      expect(
        await starknetCall(LOCKED, "starknet_call", { request: request(contract), block_id: "latest" }),
      ).toBe(false);
      // the key listed the short form: the padded one is the same contract
      expect(await starknetCall(LOCKED_DEDICATED, "starknet_call", [request(contract), "latest"])).toBe(
        false,
      );
    }
    expect(await starknetCall(LOCKED, "starknet_call", [request(OTHER), "latest"])).toBe(true);
    expect(await starknetCall(LOCKED, "starknet_call", { request: request(OTHER), block_id: "latest" })).toBe(
      true,
    );
    // a key not locked to contracts calls any
    expect(await starknetCall(TEST_KEYS[0]?.key as string, "starknet_call", [request(OTHER), "latest"])).toBe(
      false,
    );
  });

  it("Starknet: storage, class and events name their contract; a read of none is refused", async () => {
    expect(await starknetCall(LOCKED, "starknet_getStorageAt", [TOKEN, "0x1", "latest"])).toBe(false);
    expect(await starknetCall(LOCKED, "starknet_getStorageAt", [OTHER, "0x1", "latest"])).toBe(true);
    expect(
      await starknetCall(LOCKED, "starknet_getStorageAt", {
        contract_address: OTHER,
        key: "0x1",
        block_id: "latest",
      }),
    ).toBe(true);
    expect(await starknetCall(LOCKED, "starknet_getClassAt", ["latest", TOKEN_SHORT])).toBe(false);
    expect(
      await starknetCall(LOCKED, "starknet_getClassHashAt", { block_id: "latest", contract_address: OTHER }),
    ).toBe(true);
    const events = (address?: string) => ({
      filter: { from_block: "latest", to_block: "latest", chunk_size: 10, ...(address && { address }) },
    });
    expect(await starknetCall(LOCKED, "starknet_getEvents", events(TOKEN))).toBe(false);
    expect(await starknetCall(LOCKED, "starknet_getEvents", events(OTHER))).toBe(true);
    // every contract's events
    expect(await starknetCall(LOCKED, "starknet_getEvents", events())).toBe(true);
    // an account's nonce is not the list's concern, as an EVM account's is not
    expect(await starknetCall(LOCKED, "starknet_getNonce", ["latest", OTHER])).toBe(false);
  });

  // starknet_getStorageProof(block_id, class_hashes, contract_addresses, contracts_storage_keys): a proof of
  // each listed contract's leaf (its class hash and nonce) and of each named contract's storage
  it("Starknet: a storage proof names contracts in two places, and both are held to the list", async () => {
    const proof = (addresses: string[], storage: string[]) => [
      "latest",
      [],
      addresses,
      storage.map((contract_address) => ({ contract_address, storage_keys: ["0x1"] })),
    ];
    expect(await starknetCall(LOCKED, "starknet_getStorageProof", proof([TOKEN], [TOKEN_SHORT]))).toBe(false);
    expect(await starknetCall(LOCKED, "starknet_getStorageProof", proof([], [TOKEN]))).toBe(false);
    expect(await starknetCall(LOCKED, "starknet_getStorageProof", proof([OTHER], [TOKEN]))).toBe(true);
    expect(await starknetCall(LOCKED, "starknet_getStorageProof", proof([TOKEN], [OTHER]))).toBe(true);
    expect(await starknetCall(LOCKED, "starknet_getStorageProof", proof([OTHER], []))).toBe(true);
    expect(
      await starknetCall(LOCKED, "starknet_getStorageProof", {
        block_id: "latest",
        contract_addresses: [OTHER],
        contracts_storage_keys: [{ contract_address: TOKEN, storage_keys: ["0x1"] }],
      }),
    ).toBe(true);
  });

  it("Starknet: a trace, which holds the state of every contract it touched, is refused to a locked key", async () => {
    const hash = "0x1234";
    expect(await starknetCall(LOCKED_DEDICATED, "starknet_traceTransaction", [hash])).toBe(true);
    expect(
      await starknetCall(LOCKED_DEDICATED, "starknet_traceTransaction", { transaction_hash: hash }),
    ).toBe(true);
    expect(
      await starknetCall(LOCKED_DEDICATED, "starknet_traceBlockTransactions", [{ block_number: 1 }]),
    ).toBe(true);
    expect(await starknetCall(LOCKED_DEDICATED, "starknet_simulateTransactions", ["latest", [], []])).toBe(
      true,
    );
    expect(await starknetCall("FNtestDedicated0000000000000000", "starknet_traceTransaction", [hash])).toBe(
      false,
    );
  });

  const thor = (key: string, path: string, body?: unknown) =>
    refusedFor(
      vechain,
      gw.call(
        "vet",
        `/${key}${path}`,
        body === undefined ? { method: "GET" } : { body: JSON.stringify(body) },
      ),
    );

  it("VeChain: a contract's code and storage by the path's address, in any case", async () => {
    for (const address of [VTHO, VTHO_LOWER]) {
      expect(await thor(LOCKED, `/accounts/${address}/code`)).toBe(false);
      expect(await thor(LOCKED, `/accounts/${address}/storage/0x${"0".repeat(64)}`)).toBe(false);
    }
    expect(await thor(LOCKED, `/accounts/${STRANGER}/code`)).toBe(true);
    expect(await thor(LOCKED, `/accounts/${STRANGER}/storage/0x${"0".repeat(64)}`)).toBe(true);
    expect(await thor(LOCKED, `/accounts/${STRANGER}/storage/raw/0x${"0".repeat(64)}`)).toBe(true);
    // an account's balance is not the list's concern
    expect(await thor(LOCKED, `/accounts/${STRANGER}`)).toBe(false);
  });

  it("VeChain: a call of clauses by each clause's `to`; the single call by its path; a log query by its criteria", async () => {
    const clauses = (...to: (string | null)[]) => ({
      clauses: to.map((t) => ({ to: t, value: "0x0", data: "0x" })),
    });
    // the batch call (connex and thor-devkit POST /accounts/*)
    expect(await thor(LOCKED, "/accounts/*", clauses(VTHO_LOWER))).toBe(false);
    expect(await thor(LOCKED, "/accounts/*", clauses(VTHO_LOWER, STRANGER))).toBe(true);
    // a clause that deploys a contract names none
    expect(await thor(LOCKED, "/accounts/*", clauses(null))).toBe(true);
    expect(await thor(LOCKED, "/accounts", clauses(STRANGER))).toBe(true);
    expect(await thor(LOCKED, `/accounts/${VTHO_LOWER}`, { value: "0x0", data: "0x" })).toBe(false);
    expect(await thor(LOCKED, `/accounts/${STRANGER}`, { value: "0x0", data: "0x" })).toBe(true);
    const criteria = (...address: string[]) => ({
      range: null,
      criteriaSet: address.map((a) => ({ address: a })),
    });
    expect(await thor(LOCKED, "/logs/event", criteria(VTHO))).toBe(false);
    expect(await thor(LOCKED, "/logs/event", criteria(VTHO, STRANGER))).toBe(true);
    expect(await thor(LOCKED, "/logs/event", { range: null })).toBe(true);
  });

  it("VeChain: a member the lock reads, written in another case, is refused: Thor's Go decoder would read it", async () => {
    // Go's encoding/json matches member names whatever their case and keeps the last: `To` after `to`
    // would call STRANGER while the gateway read VTHO
    for (const [path, raw, member] of [
      [
        "/accounts/*",
        `{"clauses":[{"to":"${VTHO_LOWER}","To":"${STRANGER}","value":"0x0","data":"0x"}]}`,
        "To",
      ],
      [
        "/accounts/*",
        `{"clauses":[{"to":"${VTHO_LOWER}","value":"0x0","data":"0x"}],"Clauses":[{"to":"${STRANGER}"}]}`,
        "Clauses",
      ],
      [
        "/logs/event",
        `{"range":null,"criteriaSet":[{"address":"${VTHO}","Address":"${STRANGER}"}]}`,
        "Address",
      ],
    ] as const) {
      const before = vechain.requests.length;
      const answer = await gw.call("vet", `/${LOCKED}${path}`, { body: raw });
      expect(answer.status, raw).toBe(400);
      expect(answer.json).toMatchObject({ error: { code: "INVALID_REQUEST", member } });
      expect(vechain.requests.length).toBe(before);
    }
  });
});
