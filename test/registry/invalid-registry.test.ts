import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RegistryError } from "../../codegen/load.js";
import { buildModel } from "../../codegen/model.js";
import { ROOT } from "./helpers.js";

const BASE = readFileSync(join(ROOT, "test/fixtures/registry/minimal.yaml"), "utf8");
const dir = mkdtempSync(join(tmpdir(), "registry-invalid-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Defect {
  readonly name: string;
  readonly from: string;
  readonly to: string;
  /** The exact message after the `file:` prefix. */
  readonly message: string;
}

/** The REST interface's head call through the end of the file: the Beta network and its endpoints. */
const BETA_TAIL = BASE.slice(BASE.indexOf("    head: { route: GET /status"));

/** BETA_TAIL with a chain call on the REST interface and the chain each Beta endpoint names. */
function betaTail(chain: { call: string; main?: string; testnet?: string }): string {
  const named = (name: string | undefined) => (name === undefined ? "" : `, chain: ${name}`);
  return BETA_TAIL.replace("\nnetworks:", `\n    chain: ${chain.call}\nnetworks:`)
    .replace(
      "{ label: beta, environment: mainnet, nodeClass: full }",
      `{ label: beta, environment: mainnet, nodeClass: full${named(chain.main)} }`,
    )
    .replace(
      "{ label: beta-testnet, environment: testnet, nodeClass: full }",
      `{ label: beta-testnet, environment: testnet, nodeClass: full${named(chain.testnet)} }`,
    );
}

// Each row makes exactly one edit to the valid minimal registry and names the message it must produce.
const defects: readonly Defect[] = [
  {
    name: "a label used twice",
    from: "{ label: beta-testnet,",
    to: "{ label: alpha, labelRule: the defect under test,",
    message: '51:18 label "alpha" is already used by network alpha',
  },
  {
    name: "a label that breaks the label rules (<code>, <code>-testnet, <code>-archive)",
    from: "{ label: alpha-archive,",
    to: "{ label: alpha-old,",
    message:
      '44:18 label "alpha-old" breaks the label rules for environment archive (expected "alpha-archive"); declare labelRule to make an exception',
  },
  {
    name: "a network without a mainnet",
    from: "      - { label: beta, environment: mainnet, nodeClass: full }\n",
    to: "",
    message: "50:7 network beta needs exactly one mainnet endpoint (or mainnet: false), found 0",
  },
  {
    name: "an environment that the network does not name",
    from: "{ label: alpha-archive, environment: archive, nodeClass: archive, chainId: 7 }",
    to: "{ label: alpha-devnet, environment: devnet, nodeClass: full, chainId: 8 }",
    message:
      '44:45 endpoint "alpha-devnet": environment "devnet" is not one of mainnet, testnet, archive; name a testnet under the network\'s testnets',
  },
  {
    name: "a named testnet whose label breaks the label rules (<code>-<name>)",
    from: "      - { label: alpha-archive, environment: archive, nodeClass: archive, chainId: 7 }\n",
    to: "      - { label: alpha-archive, environment: archive, nodeClass: archive, chainId: 7 }\n      - { label: alpha-dev, environment: devnet, nodeClass: full, chainId: 8 }\n    testnets: [devnet]\n",
    message:
      '45:18 label "alpha-dev" breaks the label rules for environment devnet (expected "alpha-devnet"); declare labelRule to make an exception',
  },
  {
    name: "a named testnet that no endpoint serves",
    from: "    name: Alpha\n",
    to: "    name: Alpha\n    testnets: [devnet]\n",
    message: '40:16 network alpha names testnet "devnet" but no endpoint serves it',
  },
  {
    name: "a named testnet called like a base environment",
    from: "    name: Alpha\n",
    to: "    name: Alpha\n    testnets: [archive]\n",
    message:
      '40:16 network alpha names testnet "archive", which is a base environment; list only named testnets',
  },
  {
    name: "an endpoint that serves eth_chainId without a chain id",
    from: "{ label: alpha-archive, environment: archive, nodeClass: archive, chainId: 7 }",
    to: "{ label: alpha-archive, environment: archive, nodeClass: archive }",
    message:
      '44:9 endpoint "alpha-archive" serves eth_chainId but declares no chainId; declare it, or say why there is none with noChainId on network alpha',
  },
  {
    name: "a chain id on a network that serves no eth_chainId",
    from: "{ label: beta, environment: mainnet, nodeClass: full }",
    to: "{ label: beta, environment: mainnet, nodeClass: full, chainId: 9 }",
    message: '50:72 endpoint "beta" declares chainId 9 but network beta serves no eth_chainId',
  },
  {
    name: "an archive whose chain id is not its mainnet's",
    from: "{ label: alpha-archive, environment: archive, nodeClass: archive, chainId: 7 }",
    to: "{ label: alpha-archive, environment: archive, nodeClass: archive, chainId: 8 }",
    message:
      '44:84 endpoint "alpha-archive" declares chainId 8 but "alpha" of the same chain (mainnet) declares 7',
  },
  {
    name: "a testnet with its mainnet's chain id",
    from: "      - { label: alpha-archive, environment: archive, nodeClass: archive, chainId: 7 }\n",
    to: "      - { label: alpha-archive, environment: archive, nodeClass: archive, chainId: 7 }\n      - { label: alpha-testnet, environment: testnet, nodeClass: full, chainId: 7 }\n",
    message:
      '45:81 endpoint "alpha-testnet" (testnet) declares chainId 7, the id of "alpha" (mainnet); each chain has its own id',
  },
  {
    name: "a chain id on a network that says it has none",
    from: "    name: Alpha\n    blockTime: 6\n    mounts: [{ path: /, interface: evm }]\n    endpoints:\n      - { label: alpha, environment: mainnet, nodeClass: full, websocket: true, chainId: 7 }\n      - { label: alpha-archive, environment: archive, nodeClass: archive, chainId: 7 }\n",
    to: "    name: Alpha\n    blockTime: 6\n    noChainId: the defect under test\n    mounts: [{ path: /, interface: evm }]\n    endpoints:\n      - { label: alpha, environment: mainnet, nodeClass: full, websocket: true, chainId: 7 }\n      - { label: alpha-archive, environment: archive, nodeClass: archive }\n",
    message: '44:90 endpoint "alpha" declares chainId 7 but network alpha says noChainId',
  },
  {
    name: "noChainId on a network that serves no eth_chainId",
    from: "    name: Beta\n",
    to: "    name: Beta\n    noChainId: the defect under test\n",
    message: "47:16 network beta serves no eth_chainId, so it needs no noChainId; remove it",
  },
  {
    name: "a method both allowed and denied",
    from: "deny: [admin_*, eth_sign]",
    to: "deny: [admin_*, eth_sign, eth_get*]",
    message: '19:33 method "eth_getBalance" is both allowed (shared) and denied by "eth_get*"',
  },
  {
    name: "a method in two groups",
    from: "dedicated: [debug_traceTransaction]",
    to: "dedicated: [debug_traceTransaction, eth_getBalance]",
    message: '17:43 method "eth_getBalance" is listed in both shared and dedicated',
  },
  {
    name: "a route template that does not compile",
    from: "- GET /blocks/{block}\n",
    to: "- GET /blocks/{block}x\n",
    message:
      '29:11 route "GET /blocks/{block}x": segment "{block}x" is neither a literal nor a whole {parameter}',
  },
  {
    name: "a denied route that an allowed route would serve",
    from: "- POST /admin/shutdown",
    to: "- GET /blocks/latest",
    message: '34:11 denied route "GET /blocks/latest" is reachable through an allowed route',
  },
  {
    name: "a jsonrpc interface without an envelope",
    from: "    envelope: positional\n",
    to: "",
    message: '10:5 interface "evm" is jsonrpc and needs an envelope',
  },
  {
    name: "a mount of an undefined interface",
    from: "mounts: [{ path: /, interface: chainrest }]",
    to: "mounts: [{ path: /, interface: chain-rest }]",
    message: '48:36 interface "chain-rest" is not defined under interfaces',
  },
  {
    name: "an unknown field",
    from: "    name: Alpha\n",
    to: "    name: Alpha\n    colour: red\n",
    message: '40:5 networks[0]: unknown field "colour" (schema: additionalProperties)',
  },
  {
    name: "a value outside its enum",
    from: "{ label: beta, environment: mainnet, nodeClass: full }",
    to: "{ label: beta, environment: mainnet, nodeClass: pruned }",
    message:
      "50:57 networks[1].endpoints[0].nodeClass: must be equal to one of the allowed values (full, archive) (schema: enum)",
  },
  {
    name: "a chain id JavaScript cannot hold exactly (past 2^53 - 1, which rounds)",
    from: "{ label: alpha-archive, environment: archive, nodeClass: archive, chainId: 7 }",
    to: "{ label: alpha-archive, environment: archive, nodeClass: archive, chainId: 9007199254740993 }",
    message: "44:84 networks[0].endpoints[1].chainId: must be <= 9007199254740991 (schema: maximum)",
  },
  {
    name: "a head route with parameters",
    from: "head: { route: GET /status,",
    to: 'head: { route: "GET /blocks/{block}",',
    message: '35:20 head route "GET /blocks/{block}" must be a concrete path, without parameters',
  },
  {
    name: "a network head route that no interface of the network serves",
    from: "    mounts: [{ path: /, interface: chainrest }]\n",
    to: "    mounts: [{ path: /, interface: chainrest }]\n    head: { route: GET /height, field: height, encoding: integer }\n",
    message:
      '49:20 head route "GET /height" is not shared by any REST interface mounted at / on network beta',
  },
  {
    name: "a write that is not a method the interface allows",
    from: "      deny: [admin_*, eth_sign]\n",
    to: "      deny: [admin_*, eth_sign]\n    writes: [eth_sendRawTransaction]\n",
    message: '20:14 write "eth_sendRawTransaction" is not a method this interface allows',
  },
  {
    name: "a write route that the interface's routes do not reach",
    from: "        - POST /admin/shutdown\n",
    to: "        - POST /admin/shutdown\n    writes: [POST /transactions]\n",
    message: '35:14 write "POST /transactions" is not a route this interface allows',
  },
  {
    name: "a network head that reads its interface's own head call in another encoding",
    from: "    mounts: [{ path: /, interface: chainrest }]\n",
    to: "    mounts: [{ path: /, interface: chainrest }]\n    head: { route: GET /status, field: height, encoding: hex-quantity }\n",
    message:
      '49:58 head encoding "hex-quantity" differs from interface chainrest\'s head, the same call, which reads encoding "integer"',
  },
  {
    name: "a network head route with a parameter left in it",
    from: "    mounts: [{ path: /, interface: chainrest }]\n",
    to: '    mounts: [{ path: /, interface: chainrest }]\n    head: { route: "GET /blocks/{block}", field: height, encoding: integer }\n',
    message: '49:20 head route "GET /blocks/{block}" must be a concrete path, without parameters',
  },
  {
    name: "another network's chain id, copied",
    from: "      - { label: beta-testnet, environment: testnet, nodeClass: full }\n",
    to: "      - { label: beta-testnet, environment: testnet, nodeClass: full }\n  - code: gamma\n    name: Gamma\n    blockTime: 6\n    mounts: [{ path: /, interface: evm }]\n    endpoints:\n      - { label: gamma, environment: mainnet, nodeClass: full, chainId: 7 }\n",
    message:
      '57:73 endpoint "gamma" declares chainId 7, which is network alpha\'s ("alpha"); each network\'s chains are its own',
  },
  {
    name: "a filter-making method that is no method of the interface",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    reads:\n      block: { encoding: hex-quantity, headTags: [latest] }\n      atHead: [eth_blockNumber]\n      handles: { make: [eth_newFiltr], use: { eth_getBalance: 0 } }\n",
    message: '24:25 "eth_newFiltr" is not one of the interface\'s methods',
  },
  {
    name: "a filter-making method the interface denies",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    reads:\n      block: { encoding: hex-quantity, headTags: [latest] }\n      atHead: [eth_blockNumber]\n      handles: { make: [eth_sign], use: { eth_getBalance: 0 } }\n",
    message: '24:25 "eth_sign" is not one of the interface\'s methods',
  },
  {
    name: "a positional block place for a method whose block is not its params object",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    reads:\n      block: { encoding: hex-quantity, headTags: [latest] }\n      at: { eth_getBalance: 1 }\n      positionalAt: { eth_getBalance: [1] }\n",
    message: '24:39 "eth_getBalance" does not read its block from its params object (reads.at)',
  },
  {
    name: "a range with one bound a position and the other a member",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    reads:\n      block: { encoding: hex-quantity, headTags: [latest] }\n      atHead: [eth_blockNumber]\n      ranges: { eth_getBalance: { param: params, from: 0, to: toBlock, splitAbove: 10, refuseAbove: 10 } }\n",
    message: "24:33 positional bounds need both from and to as positions, and param: params",
  },
  {
    name: "a finality call whose height call is no method of the interface",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: '    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    reads:\n      block: { encoding: hex-quantity, headTags: [latest] }\n      atHead: [eth_blockNumber]\n      cache:\n        finalized: { method: eth_blockNumber, field: [result], heightBy: { method: eth_getHeaderByHash, params: ["{hash}"], field: [result, number], encoding: hex-quantity } }\n',
    message: '25:20 "eth_getHeaderByHash" is not one of the interface\'s methods',
  },
  {
    name: "a REST finality route that the interface does not serve",
    from: "    head: { route: GET /status, field: height, encoding: integer }\n",
    to: '    head: { route: GET /status, field: height, encoding: integer }\n    reads:\n      block: { encoding: integer, headTags: [] }\n      paths: { "/blocks/{}": 1 }\n      cache:\n        finalized: { route: GET /solid, field: [height], encoding: integer }\n',
    message: '40:29 "GET /solid" is not a route this interface serves',
  },
  {
    name: "a REST finality route with a parameter",
    from: "    head: { route: GET /status, field: height, encoding: integer }\n",
    to: '    head: { route: GET /status, field: height, encoding: integer }\n    reads:\n      block: { encoding: integer, headTags: [] }\n      paths: { "/blocks/{}": 1 }\n      cache:\n        finalized: { route: "GET /blocks/{block}", field: [height], encoding: integer }\n',
    message: '40:29 "GET /blocks/{block}" must be a concrete path, without parameters',
  },
  {
    name: "a finality route on a JSON-RPC interface",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    reads:\n      block: { encoding: hex-quantity, headTags: [latest] }\n      atHead: [eth_blockNumber]\n      cache:\n        finalized: { route: GET /status, field: [height], encoding: integer }\n",
    message: "25:20 a jsonrpc interface's finalized height is a depth or its calls",
  },
  {
    name: "a long-poll method that the interface does not serve",
    from: "      deny: [admin_*, eth_sign]\n",
    to: "      deny: [admin_*, eth_sign]\n    longPolls: { methods: [eth_sign], heldMs: 1000 }\n",
    message: '20:28 long poll "eth_sign" is not a method this interface serves',
  },
  {
    name: "methods taken by POST only in REST shape on an interface that has no REST shapes",
    from: "      deny: [admin_*, eth_sign]\n",
    to: "      deny: [admin_*, eth_sign]\n    restPostOnly: [eth_getBalance]\n",
    message: "20:19 names calls in REST shape, but the interface has no restPaths",
  },
  {
    name: "a method taken by POST only in REST shape that the interface does not serve",
    from: "      deny: [admin_*, eth_sign]\n",
    to: "      deny: [admin_*, eth_sign]\n    restPaths: [/api]\n    restPostOnly: [eth_sign]\n",
    message: '21:20 "eth_sign" is not a method this interface serves',
  },
  {
    name: "a long poll that the interface's routes do not reach",
    from: "        - POST /admin/shutdown\n",
    to: "        - POST /admin/shutdown\n    longPolls: { routes: [GET /wait], heldMs: 1000 }\n",
    message: '35:27 long poll "GET /wait" is not a route this interface allows',
  },
  {
    name: "a long poll that is a stream route",
    from: "        - POST /admin/shutdown\n",
    to: "        - POST /admin/shutdown\n    longPolls:\n      routes:\n        - GET /monitor/{chain}\n      heldMs: 1000\n",
    message: '37:11 long poll "GET /monitor/{chain}" is a stream already',
  },
  {
    name: "a subscription kind whose subscribe method is not in methods.subscribe",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: '    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    subscriptions:\n      idMember: subscription\n      kinds:\n        - subscribe: [eth_subscribe]\n          heads: { number: number, parent: parentHash, encoding: hex-quantity, byHash: { method: eth_getBalance, params: ["{hash}"] } }\n',
    message: '24:23 "eth_subscribe" is not in methods.subscribe',
  },
  {
    name: "a subscription's last notifications named for a method not in methods.subscribe",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    subscriptions:\n      idMember: subscription\n      ends:\n        eth_subscribe: { at: event, status: [done] }\n      kinds: []\n",
    message: '24:24 "eth_subscribe" is not in methods.subscribe',
  },
  {
    name: "a chain named on a network whose interface names none",
    from: "{ label: beta, environment: mainnet, nodeClass: full }",
    to: '{ label: beta, environment: mainnet, nodeClass: full, chain: "beta-main" }',
    message:
      '50:70 endpoint "beta" declares chain "beta-main" but no interface of network beta names its chain in text',
  },
  {
    name: "a chain call that reads a number but is not eth_chainId",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    chain: { method: eth_getBalance, params: [], field: result, encoding: hex-quantity }\n",
    message:
      '21:75 interface "evm" reads its chain as a number, which only eth_chainId answers (compared with chainId); name the chain as text instead',
  },
  {
    name: "an endpoint that names no chain where its interface names one in text",
    from: BETA_TAIL,
    to: betaTail({ call: "{ route: GET /blocks/0, field: hash }", main: "beta-main" }),
    message:
      '52:9 endpoint "beta-testnet" declares no chain; its interface chainrest names the chain its nodes are on, so declare the name they answer',
  },
  {
    name: "a testnet that names its mainnet's chain",
    from: BETA_TAIL,
    to: betaTail({ call: "{ route: GET /blocks/0, field: hash }", main: "beta-main", testnet: "beta-main" }),
    message:
      '52:78 endpoint "beta-testnet" (testnet) declares chain "beta-main", the chain of "beta" (mainnet); each chain has its own',
  },
  {
    name: "a chain route the interface does not allow",
    from: BETA_TAIL,
    to: betaTail({ call: "{ route: GET /genesis, field: hash }", main: "beta-main", testnet: "beta-test" }),
    message: '37:21 chain route "GET /genesis" is not allowed by routes.shared',
  },
  {
    name: "an errorMember on a JSON-RPC interface",
    from: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n",
    to: "    head: { method: eth_blockNumber, params: [], field: result, encoding: hex-quantity }\n    errorMember: Error\n",
    message:
      "21:18 interface \"evm\" is jsonrpc: its nodes' errors are the answer's `error` member, so it takes no errorMember",
  },
  {
    name: "a network without its block time",
    from: "    name: Beta\n    blockTime: 6\n",
    to: "    name: Beta\n",
    message: "45:5 networks[1]: must have required property 'blockTime' (schema: required)",
  },
  {
    name: "a network none of whose interfaces has an SDK example",
    from: "    example: { sdk: fetch, code: \"await fetch('{url}/status')\" }\n",
    to: "",
    message:
      "47:13 network beta: none of its interfaces (chainrest) has an example, the first call in its SDK that the customer dashboard shows",
  },
  {
    name: "a duplicate YAML key",
    from: "    name: Beta\n",
    to: "    name: Beta\n    name: Gamma\n",
    message: "47:5 YAML: Map keys must be unique",
  },
  {
    name: "a block-in-path rule whose shape names no route (a typo)",
    from: "    head: { route: GET /status,",
    to: '    reads: { block: { encoding: integer, headTags: [head] }, paths: { "/block/{}": 1 } }\n    head: { route: GET /status,',
    message: '35:84 "/block/{}" is the shape of no route this interface serves (a parameter is {})',
  },
  {
    name: "a height-in-answer rule whose shape names no route (a typo under a read at the head)",
    from: "    head: { route: GET /status,",
    to: '    reads: { block: { encoding: integer, headTags: [head] }, paths: { "/blocks/{}": 1 }, atHeadPaths: [/status], heightInPaths: { "/status/{}": [height] } }\n    head: { route: GET /status,',
    message: '35:145 "/status/{}" is the shape of no route this interface serves (a parameter is {})',
  },
  {
    name: "a finalized-view prefix that names no route (a typo)",
    from: "    head: { route: GET /status,",
    to: '    reads: { block: { encoding: integer, headTags: [head] }, paths: { "/blocks/{}": 1 }, finalViews: [/statuz] }\n    head: { route: GET /status,',
    message: '35:103 "/statuz" is the shape of no route this interface serves (a parameter is {})',
  },
  {
    name: "a page-of-blocks rule whose shape names no route (a typo)",
    from: "    head: { route: GET /status,",
    to: '    reads: { block: { encoding: integer, headTags: [head] }, paths: { "/blocks/{}": 1 }, pageEnds: { /statuz: end } }\n    head: { route: GET /status,',
    message: '35:111 "/statuz" is the shape of no route this interface serves (a parameter is {})',
  },
  {
    name: "a finalized-read rule whose shape names no route (a typo)",
    from: "    head: { route: GET /status,",
    to: '    reads: { block: { encoding: integer, headTags: [head] }, paths: { "/blocks/{}": 1 }, atFinalizedPaths: { /statuz: [height] } }\n    head: { route: GET /status,',
    message: '35:119 "/statuz" is the shape of no route this interface serves (a parameter is {})',
  },
  {
    name: "params' names for a method the interface does not serve (a typo)",
    from: "    head: { method: eth_blockNumber,",
    to: "    reads: { block: { encoding: hex-quantity, headTags: [latest] }, atHead: [eth_blockNumber], paramNames: { eth_getBalanse: [address, block] } }\n    head: { method: eth_blockNumber,",
    message: '20:126 "eth_getBalanse" is not one of the interface\'s methods',
  },
  {
    name: "a write in the cache's rules",
    from: "eth_getBalance]\n      dedicated: [debug_traceTransaction]\n      websocket: [eth_subscribe, eth_unsubscribe]\n      deny: [admin_*, eth_sign]\n",
    to: "eth_getBalance, eth_sendRawTransaction]\n      dedicated: [debug_traceTransaction]\n      websocket: [eth_subscribe, eth_unsubscribe]\n      deny: [admin_*, eth_sign]\n    writes: [eth_sendRawTransaction]\n    reads:\n      block: { encoding: hex-quantity, headTags: [latest] }\n      atHead: [eth_blockNumber]\n      cache: { always: [eth_chainId, eth_sendRawTransaction] }\n",
    message: '24:38 "eth_sendRawTransaction" is a write: a write is never kept, and every one reaches a node',
  },
  {
    name: "a node error test whose pattern is not a regular expression",
    from: "    head: { method: eth_blockNumber,",
    to: '    nodeErrors: { status: 500, answer: { member: error.message, matches: "^(proto" } }\n    head: { method: eth_blockNumber,',
    message: "20:74 is not a regular expression",
  },
  {
    name: "a YAML alias whose anchor is not set before it",
    from: "    mounts: [{ path: /, interface: chainrest }]\n",
    to: "    mounts: *mounts\n",
    message: '48:13 YAML: alias "*mounts" names no anchor set before it',
  },
];

describe("an invalid registry is refused with the file, line, column and rule", () => {
  it("the base fixture is valid", () => {
    expect(buildModel(join(ROOT, "test/fixtures/registry/minimal.yaml")).endpoints).toHaveLength(4);
  });

  it("an anchor may be aliased by any number of networks (the registry is the repository's own file)", () => {
    // a hundred EVM networks sharing one mount list by alias: the YAML library's guard against alias bombs
    // threw a bare ReferenceError at its hundredth, with no place
    const networks = Array.from(
      { length: 100 },
      (_, i) =>
        `  - code: evm${i}\n    name: EVM ${i}\n    blockTime: 2\n    mounts: *evm\n    endpoints:\n      - { label: evm${i}, environment: mainnet, nodeClass: full, chainId: ${1000 + i} }\n`,
    );
    const file = join(dir, "many-aliases.yaml");
    writeFileSync(
      file,
      `${BASE.replace("    mounts: [{ path: /, interface: evm }]", "    mounts: &evm [{ path: /, interface: evm }]")}${networks.join("")}`,
    );
    expect(buildModel(file).endpoints).toHaveLength(104);
  });

  it("a chain named in text is another network's only where the same call names it", () => {
    // Aptos' chain id "1" beside Cardano's network magic "1": no node answers both calls
    const other = [
      "  otherrest:",
      "    title: Another REST node",
      "    source: test fixture",
      "    family: rest",
      "    computeUnits: { default: 20 }",
      "    routes: { shared: [GET /info] }",
      "    head: { route: GET /info, field: height, encoding: integer }",
      "    chain: { route: GET /info, field: network }",
      `    example: { sdk: fetch, code: "await fetch('{url}/info')" }`,
      "networks:",
    ].join("\n");
    const gamma = [
      "  - code: gamma",
      "    name: Gamma",
      "    blockTime: 6",
      "    mounts: [{ path: /, interface: otherrest }]",
      "    endpoints:",
      '      - { label: gamma, environment: mainnet, nodeClass: full, chain: "1" }',
      "",
    ].join("\n");
    const text = BASE.replace(
      BETA_TAIL,
      betaTail({ call: "{ route: GET /blocks/0, field: hash }", main: '"1"', testnet: "beta-test" }),
    ).replace("networks:", other);
    const file = join(dir, "text-chain-elsewhere.yaml");
    writeFileSync(file, `${text}${gamma}`);
    expect(buildModel(file).endpoints.map((e) => e.label)).toContain("gamma");
    // but a network that also mounts beta's interface, whose call names beta's chain "1", is refused it
    const both = join(dir, "text-chain-both.yaml");
    writeFileSync(
      both,
      `${text}${gamma.replace(
        "mounts: [{ path: /, interface: otherrest }]",
        "mounts: [{ path: /, interface: otherrest }, { path: /beta, interface: chainrest }]",
      )}`,
    );
    expect(() => buildModel(both)).toThrow(/declares chain "1", which is network beta's/);
  });

  for (const defect of defects) {
    it(defect.name, () => {
      expect(BASE).toContain(defect.from);
      const file = join(dir, `${defect.name.replace(/\W+/g, "-")}.yaml`);
      writeFileSync(file, BASE.replace(defect.from, defect.to));
      const error = catchRegistryError(() => buildModel(file));
      // one defect, one message, naming the file as the caller passed it
      expect(error.message.split("\n")).toEqual([`${relative(process.cwd(), file)}:${defect.message}`]);
    });
  }
});

function catchRegistryError(run: () => unknown): RegistryError {
  try {
    run();
  } catch (error) {
    if (error instanceof RegistryError) return error;
    throw error;
  }
  throw new Error("the registry was accepted");
}
