// Shapes of the tables that codegen writes under generated/. The core reads only these: it knows
// interface families, never a network.

/** The kind of family handler a mount takes (src/families/table.ts), by name. */
export type FamilyName = "jsonrpc" | "rest" | "mixed";
export type NodeClass = "full" | "archive";
export type HttpMethod = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * Who may call a JSON-RPC method: everyone, dedicated-node keys only, or WebSocket connections only;
 * `subscribe` and `unsubscribe` are WebSocket-only calls that open and close a subscription, which the
 * relay counts against its per-connection bound.
 */
export type MethodAccess = "shared" | "dedicated" | "websocket" | "subscribe" | "unsubscribe";
/** Who may call a REST route; `stream` routes are long-lived chunked responses. */
export type RouteAccess = "shared" | "dedicated" | "stream";

export type MethodTable = Readonly<Partial<Record<HttpMethod, RouteAccess>>>;

/**
 * One node of a compiled route trie. Matching walks one segment at a time, static children first, then
 * the single-segment parameter, then a trailing `{name...}` that takes every remaining segment: no
 * regular expression and no backtracking, so a lookup costs one Map probe per segment.
 */
export interface RouteNode {
  readonly children?: ReadonlyMap<string, RouteNode>;
  readonly param?: RouteNode;
  readonly rest?: MethodTable;
  /** The shape of the routes ending in `rest` (`/chains/{}/blocks/{...}`): bounded, so a metric may carry it. */
  readonly restShape?: string;
  readonly methods?: MethodTable;
  /** The shape of the routes ending at this node (`/v2/accounts/{}`). */
  readonly shape?: string;
}

export interface EnvelopeErrorDetail {
  readonly instancePath: string;
  readonly message?: string | undefined;
}

/** An ajv standalone validator for one envelope rule (registry `envelopes:`). */
export interface EnvelopeValidator {
  (data: unknown): boolean;
  errors?: EnvelopeErrorDetail[] | null;
}

/**
 * One test of a JSON answer's member (registry `nodeErrors`): the member at `member` (keys and indexes)
 * is `is`, is of `type`, matches `matches` or is one of `in`.
 */
export interface BodyTest {
  readonly member: readonly string[];
  readonly is?: string | number | boolean | null;
  readonly type?: "number" | "string" | "boolean" | "object";
  readonly matches?: RegExp;
  readonly in?: readonly (string | number)[];
}

/**
 * How an interface's node answers a call's own errors at a 5xx status (registry `nodeErrors`, or a
 * JSON-RPC envelope's `errorStatus`): an answer at `status` is read whole and is the node's answer to
 * the call when its JSON body passes `answer` and not `unavailable` (the node saying it cannot serve);
 * anything else at that status is a failure of the node, as any 5xx is (upstream/node-errors.ts).
 */
export interface NodeErrors {
  readonly status: number;
  readonly answer: BodyTest;
  readonly unavailable?: BodyTest;
  /**
   * Statuses besides `status` at which the node may say it cannot serve (a node that answers a JSON-RPC
   * 2.0 call's errors at 200, registry `unavailableAlsoAt`): a small answer at one is read whole, and one
   * passing `unavailable` is a failure.
   */
  readonly unavailableAt?: readonly number[];
}

export interface JsonRpcPolicy {
  readonly envelope: string;
  readonly validate: EnvelopeValidator;
  readonly batch: boolean;
  /** Some dialects' nodes read the body whatever its Content-Type, or none (their HTTP server never looks). */
  readonly plainTextBody: boolean;
  /**
   * The dialect's errors name their kind and cause as nearcore's do (`name`, `cause`: registry
   * `errorCauses`), which its SDKs read: the gateway's own errors carry them too (errors/respond.ts).
   */
  readonly errorCauses: boolean;
  /**
   * A call framed as JSON-RPC 1.0 is answered in 1.0's shape (registry `legacyReplies`, bitcoind's): the
   * gateway's own errors to it too (errors/respond.ts).
   */
  readonly legacyReplies: boolean;
  /**
   * The status of the node's answer to a notification, or a batch of notifications only: no body, at 200
   * or 204 (registry `notificationStatus`). A notification the gateway refuses is answered so too.
   */
  readonly notificationStatus: number;
  readonly methods: ReadonlyMap<string, MethodAccess>;
  /**
   * Each name of a method the node serves under several (registry `aliases`: state_call and state_callAt)
   * → all its names, its own first: a key's method list or a plan's disabledMethods naming one holds for all.
   */
  readonly aliases?: ReadonlyMap<string, readonly string[]>;
  /** Methods that submit something (registry `writes`): never sent to a node twice. */
  readonly writes: ReadonlySet<string>;
  /** How the dialect's subscriptions are made again on another node (registry `subscriptions`). */
  readonly subscriptions?: SubscriptionRules;
  /**
   * Paths below the mount where the node's own server takes the same calls (registry `jsonRpcPaths`:
   * toncenter's `/api/v2/jsonRPC`, which its SDKs are set up with): a call there goes to the mount's URL.
   */
  readonly paths?: ReadonlySet<string>;
  /**
   * Paths below the mount under which `<path>/<method>` is one of the dialect's calls in REST shape
   * (registry `restPaths`: toncenter's `GET /api/v2/getAddressBalance?address=…`): the gateway makes the
   * JSON-RPC call of it (families/rest-shaped.ts) and the node gets that at the mount's URL.
   */
  readonly restPaths?: ReadonlySet<string>;
  /**
   * Of those calls in REST shape, the methods the node takes by POST only (registry `restPostOnly`:
   * toncenter's runGetMethod): a GET of one is answered 405, as a GET of a write always is.
   */
  readonly restPostOnly?: ReadonlySet<string>;
  /**
   * Of those calls in REST shape, the query parameters a GET's route reads as booleans or as lists (registry
   * `restQuery`: toncenter's `archival`, `libraries`): the JSON-RPC call made of a GET carries them so.
   */
  readonly restQuery?: { readonly booleans: ReadonlySet<string>; readonly lists: ReadonlySet<string> };
  /**
   * The node software has no WebSocket server (registry `webSocketOverHttp`): a label's WebSocket sends
   * each message to the node over HTTP (ws/http-bridge.ts).
   */
  readonly webSocketOverHttp?: true;
  /** How its calls name blocks, for the rules that keep answers consistent across nodes (registry `reads`). */
  readonly reads?: ReadRules;
}

/**
 * How a JSON-RPC dialect's reads relate to the chain's blocks (src/answers/, docs/upstreams.md "Answers
 * across nodes"): where a call names its block, which of its values read at the head, and which answers
 * say which block they read. The head call (the interface's `head`) is always a head read.
 */
export interface ReadRules {
  /** How a block param names a block. */
  readonly block: BlockParamRule;
  /**
   * Method → the position of its block param in `params`, or `params` when the params object itself names
   * the block (nearcore's `{"finality": "final"}`, `{"block_id": 5}`); a call that leaves it out reads at
   * the head. A list of positions: the last of them the call gives (geth's debug_getModifiedAccountsByNumber
   * reads `(start)` or `(start, end)`, the end the newer block).
   */
  readonly at?: Readonly<Record<string, number | "params" | readonly number[]>>;
  /**
   * Method → members of its params object and the values they must have for its block param to name a block
   * the head counts: toncenter's `seqno` is the masterchain's only with `workchain: -1`, a shard's otherwise.
   * A call that does not match names no block the rules read: it is routed and cached as one without `at`.
   */
  readonly when?: Readonly<Record<string, Readonly<Record<string, string | number | boolean>>>>;
  /**
   * Methods that name no block and answer from what the node holds at its head: a transaction looked up by
   * its hash, which a node a block behind answers null for a transaction the caller has seen mined. One
   * that `at` places a block param too reads at the block it names, and at the head only when it names none,
   * but for one in `throughHead`, which needs both.
   */
  readonly atHead?: readonly string[];
  /**
   * Of `atHead`'s methods with a block param in `at`, those that read from the block they name through the
   * node's head (stellar-rpc's getLedgers from its startLedger, whose answer names the node's latest): a node
   * must have reached that block and the served head.
   */
  readonly throughHead?: readonly string[];
  /**
   * Of `atHead`, those that answer the node's finalized block (Substrate's `chain_getFinalizedHead`): they
   * go first to the node that named the highest finalized block, as a read at the finalized tag does, so
   * that two nodes at one head but not one finality do not answer by turns.
   */
  readonly atFinalized?: readonly string[];
  /**
   * Of `atHead`, those whose answer is the node's head block's hash and no height (a node's
   * `getbestblockhash`): the label's served head cannot learn from it. One that names a hash the label has
   * not answered before is held while its node's head is read, and goes out once the label has served that
   * head: a caller that got the new tip's hash is never answered an older head's count next.
   */
  readonly headHashes?: readonly string[];
  /**
   * A REST interface's routes that name a block in a path segment: the route's shape up to that segment
   * (`/chains/{}/blocks/{}`), and the segment's place below the mount (3).
   */
  readonly paths?: Readonly<Record<string, number>>;
  /**
   * A REST interface's routes that name a block in a member of their JSON body, or in the query parameter
   * of that name for a GET (java-tron's `{"num": 5}`, `?num=5`): the route's shape to the member.
   */
  readonly bodies?: Readonly<Record<string, string>>;
  /**
   * A REST interface's routes that read a page of blocks up to the one a member of their JSON body (or the
   * query parameter of that name for a GET) names, which the page leaves out (java-tron's getblockbylimitnext
   * `endNum`): a node must have reached the page's last block, or the label's served head where the page
   * runs past it (a node answers the blocks it has, and none has a block past that head yet).
   */
  readonly pageEnds?: Readonly<Record<string, string>>;
  /**
   * A REST interface's routes that list blocks back from each head they name, as many as a query parameter
   * asks (Octez's `GET /chains/{}/blocks?length=n&head=…`), which the node walks one by one: refused
   * BLOCK_RANGE_TOO_LARGE when they come to more than `refuseAbove` blocks.
   */
  readonly lists?: Readonly<Record<string, ListRule>>;
  /** Method → the member path, in the answer's `result`, of the height of the block it read. */
  readonly heightIn?: Readonly<Record<string, readonly string[]>>;
  /**
   * Method of `heightIn` → a member of its answer's `result`, and the values of it that say the height is of
   * a block still being built (a `PRE_CONFIRMED` block and receipt name the block being made),
   * which no node has yet: such an answer teaches the served head nothing.
   */
  readonly heightUnless?: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;
  /** Method → how it takes a block range, for calls whose answer is a list of what the range holds. */
  readonly ranges?: Readonly<Record<string, RangeRule>>;
  /**
   * Calls that make state on the node that answers them and name it by their result (a filter), and the
   * calls that use it, by the position of that name in their params: a use goes to the node that made it.
   */
  readonly handles?: {
    readonly make: readonly string[];
    readonly use: Readonly<Record<string, number>>;
    /**
     * The uses that scan a filter's whole range at once (`eth_getFilterLogs`): refused as a range call is
     * once that range, up to the head, is wider than the making call's `refuseAbove`.
     */
    readonly scans?: readonly string[];
  };
  /**
   * Method → its params' names, in their positional order (the OpenRPC names): where an envelope takes
   * params by name too, a call's block param and range are found by name (`at`, `ranges`' `param`).
   */
  readonly paramNames?: Readonly<Record<string, readonly string[]>>;
  /**
   * Method → where it takes how many items its answer may hold (an indexer's `get_cells(search_key,
   * order, limit)`), and the most the gateway lets through: a call asking more is refused PAGE_TOO_LARGE
   * before any node sees it, since the node may build that whole answer in memory.
   */
  readonly pageSizes?: Readonly<Record<string, PageSizeRule>>;
  /**
   * Method → where a method that `at` reads from its params object (`params`) finds its block param when
   * its params come as an array instead: the indices, outermost first (nearcore's legacy forms, `block`
   * with `[block_id]`, `chunk` with `[[block_id, shard_id]]`).
   */
  readonly positionalAt?: Readonly<Record<string, readonly number[]>>;
  /**
   * Error texts of a node that does not know a block named by hash (bitcoind's "Block not found"): such a
   * read is asked once more of another node of the label, as one it answered null (answers/by-hash.ts).
   */
  readonly unknownBlock?: readonly string[];
  /**
   * Error texts of a node that no longer holds a block it has passed (a node that prunes old blocks): a
   * read by height answered so is asked once more of another node, as unknownBlock's reads by hash are.
   */
  readonly prunedBlock?: readonly string[];
  /**
   * A REST interface's answers by which its node says it does not know a block named by hash (Octez's 404,
   * Thor's 200 `null`): such a read is asked once more of another node, as unknownBlock's are.
   */
  readonly unknownBlockAnswers?: readonly UnknownBlockAnswer[];
  /**
   * A REST interface's route shapes, as prefixes like `paths`' (`/v2/accounts/{}`), that name no block and
   * answer from the node's head (an account's balance): they go only to a node at the served head.
   */
  readonly atHeadPaths?: readonly string[];
  /**
   * A REST interface's path prefixes whose routes read the node's finalized view (java-tron's
   * `/walletsolidity`, `/walletpbft`: the solidified store): a block read there by number goes first to the
   * node that named the highest finalized block, whose view has it.
   */
  readonly finalViews?: readonly string[];
  /**
   * Of a REST interface's reads at the head, route shapes whose answer says the height it read (algod's
   * account `round`), each with the member path of that height: the label's served head learns it, as it
   * learns a JSON-RPC answer's (`heightIn`). A route under a block (`paths`) is read for it when its segment
   * names the head, and still needs the block it names by number otherwise.
   */
  readonly heightInPaths?: Readonly<Record<string, readonly string[]>>;
  /**
   * A REST interface's route shapes that answer the node's finalized block (java-tron's
   * `/walletsolidity/getnowblock`), each with where the answer holds its height: each node answers its own,
   * and the one that answered the highest goes first.
   */
  readonly atFinalizedPaths?: Readonly<Record<string, readonly string[]>>;
  /** Which reads need old state, how much a full node keeps, and how a node says it has none. */
  readonly archive?: ArchiveRule;
  /** Which answers the gateway may keep, and for how long (src/cache/, docs/cache.md). */
  readonly cache?: CacheRules;
}

/**
 * Which answers of a JSON-RPC dialect the answer cache keeps (docs/cache.md). An answer about a block that
 * can no longer change is kept until memory runs short; any other cacheable answer only while the label's
 * head stays where it was. The head call is always cacheable, at the head. Writes, subscriptions and any
 * method not named here never are.
 */
export interface CacheRules {
  /** Methods whose answer never changes on one chain (`eth_chainId`). */
  readonly always?: readonly string[];
  /**
   * Methods that name no block and answer with the node's state at its head (Ogmios' ledger-state queries):
   * kept while the label's head stays, as the head call is.
   */
  readonly atHead?: readonly string[];
  /**
   * Methods that read the block their `reads.at` param or `reads.ranges` range names: final when that block
   * is named by hash or is at or below the finalized height, else kept while the head stays.
   */
  readonly atBlock?: readonly string[];
  /**
   * Methods named by something other than a block (a transaction hash), whose answer says which block it
   * is in: the member path, in the answer's `result`, of that block's height. Final once that block is.
   */
  readonly blockIn?: Readonly<Record<string, readonly string[]>>;
  /**
   * `atBlock` methods whose answer, for a block named by hash, says that block's height: the member path in
   * the answer's `result`. Such an answer is final once that height is; any other read by hash is kept only
   * while the head stays (a reorg may replace the block), but on a chain whose blocks are final at once
   * (`finalized: {depth: 0}`).
   */
  readonly hashHeightIn?: Readonly<Record<string, readonly string[]>>;
  /** How the finalized height is learned; without it, no answer is final but those of `always`. */
  readonly finalized?: FinalityRule;
  /**
   * How the prober reads a node's head block with its hash and its parent's: a block replaced under a height
   * the gateway saw (a reorg) ends every answer kept while the head stays. Without it, only a head that goes
   * back is seen.
   */
  readonly headBlock?: HeadBlockCall;
  /**
   * Members of a result that change even in a final answer (a UTXO chain's `confirmations`): an answer that
   * holds one at its top level is kept only while the head stays.
   */
  readonly changing?: readonly string[];
  /** Block tags that read what no block holds yet (`pending`): a call naming one is never kept. */
  readonly liveTags?: readonly string[];
  /** Error texts that are the node's deterministic answer (a revert): kept when the call is final. */
  readonly deterministicErrors?: readonly string[];
  /**
   * A REST interface's answers that a node gives for a block it does not hold, though a block may answer
   * so too (a pruned block's count of 0): never kept, as an empty answer (`{}`, `[]`, `null`) is.
   */
  readonly emptyAnswers?: readonly unknown[];
  /** A pattern for param strings that mean the same in any letter case (EVM hex): compared folded. */
  readonly foldCase?: string;
  /**
   * The node answers every id as a string (ton-http-api's request model types it so): a kept answer goes to
   * a caller whose id is a number with that number as a string, as the node would have sent it.
   */
  readonly idAsText?: boolean;
}

/**
 * A call whose answer is the head block: where its height, hash and parent hash are (paths in the answer).
 * A JSON-RPC interface's method and params, or a REST interface's concrete route and body, as a
 * `FinalityRoute`'s (Octez's `GET /chains/main/blocks/head/header`).
 */
export type HeadBlockCall = (
  | {
      readonly method: string;
      readonly params?: unknown;
      /**
       * A call whose params hold the first answer's hash where they say `"{hash}"`, and whose answer holds
       * `number` and `parent`: for a chain whose head call names the best block's hash and whose header
       * holds no hash of its own (Substrate's `chain_getBlockHash()`, then `chain_getHeader(hash)`).
       */
      readonly headerBy?: { readonly method: string; readonly params: unknown };
    }
  | { readonly route: string; readonly body?: unknown }
) & {
  readonly number: readonly string[];
  readonly hash: readonly string[];
  readonly parent: readonly string[];
  readonly encoding: HeadEncoding;
};

/**
 * How the finalized height is learned: a call the prober sends each node (`eth_getBlockByNumber` at
 * `finalized`), whose answer at `field` is the height; or one whose answer at `field` names the finalized
 * block (GRANDPA's `chain_getFinalizedHead`, a hash), and a second call, `heightBy`, whose params hold that
 * value where they say "{hash}", and whose answer at its own `field` is the height; a REST interface's
 * route that answers the node's finalized block (`FinalityRoute`); or a depth below the label's served head
 * (a confirmation depth, or 0 for a chain whose blocks are final at once).
 */
export type FinalityRule =
  | FinalityCall
  | {
      readonly method: string;
      readonly params?: unknown;
      readonly field: readonly string[];
      readonly heightBy: FinalityCall;
    }
  | FinalityRoute
  | { readonly depth: number };

/**
 * A call whose answer at `field` is the finalized height, and at `hash`, where given, the finalized block's
 * hash: one named again with another hash says the final blocks were rewritten (label-finality.ts `finalizedSeen`).
 */
export interface FinalityCall {
  readonly method: string;
  readonly params?: unknown;
  readonly field: readonly string[];
  readonly encoding: HeadEncoding;
  readonly hash?: readonly string[];
}

/**
 * A REST interface's route whose answer at `field` is the node's finalized height (java-tron's
 * `POST /walletsolidity/getnowblock`: its solidified block), as a FinalityCall is a JSON-RPC dialect's. The
 * route names no block (`METHOD /path`, as the registry's head routes do), and the node must serve it.
 */
export interface FinalityRoute {
  readonly route: string;
  readonly body?: unknown;
  readonly field: readonly string[];
  readonly encoding: HeadEncoding;
  readonly hash?: readonly string[];
}

/**
 * A full node keeps the state of its last `fullHistory` blocks: a `state` read of an older block goes to
 * the network's archive endpoint, and so does one that a full node refuses with an error whose message
 * holds one of `missingState` (docs/upstreams.md, "Archive").
 */
export interface ArchiveRule {
  readonly state: readonly string[];
  /**
   * Reads of history a full node may no longer keep, whatever block they name (EIP-4444's expired blocks,
   * receipts and logs; a transaction traced on its block's pruned parent state): they go to a full node
   * first, and to the archive nodes once more only when it answers one of `missingState`.
   */
  readonly history?: readonly string[];
  /**
   * Errors a full node answers alike for history it dropped and for history that never was (nearcore's
   * UNKNOWN_TRANSACTION for an outcome it garbage-collected or never had): a `history` read sent alone (not
   * in a batch, which nearcore does not take) so answered is asked once more of the archive nodes for a key
   * with archive access, whose answer the caller gets; a key without archive access gets the full node's
   * answer, never ARCHIVE_REQUIRED.
   */
  readonly unknownHistory?: readonly string[];
  readonly fullHistory: number;
  readonly missingState: readonly string[];
}

/**
 * A call that takes a block range in an object param (`eth_getLogs`' filter): the range's bounds are its
 * `from` and `to` members, each a block param (a height, a head tag, or left out for the head). Wider than
 * `splitAbove` blocks, the gateway splits it into sub-ranges and merges their lists in order; wider than
 * `refuseAbove`, it refuses it. A deployment may set both per label (`blockRanges`).
 */
export interface RangeRule {
  /** The range object's position in `params`, or `params` when the params object itself is the range. */
  readonly param: number | "params";
  /**
   * The range object's member that names its first block; a position (with `param` "params") when the
   * bounds are two params of their own (geth's `debug_getModifiedAccountsByNumber(startNum, endNum)`): the
   * call's params, placed by `paramNames` when sent by name, are then the range. Such a range is never split
   * (its answer is no list of sub-ranges' answers), only refused above `refuseAbove`.
   */
  readonly from: string | number;
  readonly to: string | number;
  /**
   * Where a range that leaves `to` out ends: the head (the default; geth reads a missing `toBlock` as
   * `latest`) or its start (geth's `debug_getModifiedAccountsByNumber(startNum)` compares that block with
   * its parent: one block).
   */
  readonly openTo?: "head" | "from";
  /**
   * The filter's member that names its one block by hash instead of a range (`eth_getLogs`' `blockHash`):
   * given, the call is no range. A range call without one is held to its range whatever else its filter
   * holds: a node may pass over a member it does not know and scan the bounds beside it.
   */
  readonly hash?: string;
  readonly splitAbove: number;
  readonly refuseAbove: number;
  /**
   * Members that page the answer (`trace_filter`'s `after` and `count`): with one of them the node pages
   * the range itself, so it is not split, only refused above `refuseAbove`.
   */
  readonly pages?: readonly string[];
  /**
   * Where a range that leaves `from` out starts: the head (the default; geth reads a missing `fromBlock`
   * as `latest`) or genesis (Pathfinder's `starknet_getEvents` scans from block 0).
   */
  readonly openFrom?: "head" | "genesis";
  /**
   * A filter's range (`eth_newFilter`): it may name blocks still to come, which the filter watches rather
   * than scans, so a bound past the head counts to the head and the call waits for no node to reach it;
   * it is never split (its pieces would be several filters), only refused above `refuseAbove`.
   */
  readonly watches?: boolean;
}

/** Where a call takes the size of the page it asks for, and the largest the gateway lets through. */
export interface PageSizeRule {
  /**
   * The size's position in `params` (found by `paramNames` in params sent by name), or its member's name
   * where the interface takes its params as an object only.
   */
  readonly param: number | string;
  readonly refuseAbove: number;
}

/** How a REST route's list of blocks is as long as its query asks (registry `reads.lists`). */
export interface ListRule {
  /** The query parameter that says how many blocks each head's list holds. */
  readonly member: string;
  /** The query parameter, repeated, that names each head the list starts from (none: one list). */
  readonly each?: string;
  readonly refuseAbove: number;
}

/**
 * A block param: a height in `encoding`, a tag that reads at the head (`latest`), a hash matching
 * `hashPattern`, or an object whose `numberMember` or `hashMember` holds one of those (EIP-1898).
 */
export interface BlockParamRule {
  readonly encoding: HeadEncoding;
  readonly headTags: readonly string[];
  readonly hashPattern?: string;
  readonly numberMember?: string;
  /**
   * An object that names no block by `numberMember`, hash or tag reads at the head (stellar-rpc's page by
   * cursor, a position the node must have reached), rather than naming none.
   */
  readonly unnamedIsHead?: boolean;
  readonly hashMember?: string;
  /** An object with this member reads relative to the head, whatever its value (nearcore's `finality`). */
  readonly tagMember?: string;
  /** A pattern for values that read relative to the head other than `headTags` (a block counted back from it). */
  readonly headRelative?: string;
  /** A plain JSON number is a height too, whatever `encoding` (Substrate's NumberOrHex). */
  readonly plainNumbers?: boolean;
  /**
   * A 0x-prefixed hex number is a height too, whatever `encoding`: Thor reads a revision with Go's
   * strconv.ParseUint(s, 0, 0), so `/blocks/0x1312d01` is block 20000001 to it, not a value to route anywhere.
   */
  readonly hexNumbers?: boolean;
  /**
   * A block named by another and a count of blocks after or before it, with one of these delimiters between
   * them (Octez's parse_block: `5000000+1`, `5000002~1`, `genesis+N`, `<hash>~N`): a level moved by the count.
   */
  readonly offsets?: { readonly after: readonly string[]; readonly before: readonly string[] };
  /**
   * A decimal string where a number goes is that number, as the node reads it (ton-http-api coerces its
   * params' strings to integers; a GET's query has no other kind): for the block and for `when`. Beside a hex
   * `encoding`, decimal digits alone (Nethermind and anvil read a block's `"100"` as block 100).
   */
  readonly numbersAsText?: boolean;
  /** Tags that name the chain's first block (EVM's `earliest`): block 0 for a range's bound and the cache. */
  readonly genesisTags?: readonly string[];
  /**
   * Head tags that name a block at or below the head, whose height only the node knows (EVM's `safe` and
   * `finalized`): a range ending at one is split up to the label's finalized height, the rest left to the tag.
   */
  readonly settledTags?: readonly string[];
  /**
   * The settled tag that names the block the finality probe reads (EVM's `finalized`): a range ending at it
   * ends at the label's finalized height, which the gateway knows.
   */
  readonly finalizedTag?: string;
}

/**
 * A REST interface's own rules: where its routes name a block, as `ReadRules` says for JSON-RPC, and which
 * GET answers the cache keeps: `cache.always` names route shapes (`GET /v2/genesis`), `cache.atBlock` the
 * `paths` prefixes whose block segment says how long an answer lives, `cache.finalized` a depth.
 */
export type RestReadRules = Pick<
  ReadRules,
  | "block"
  | "paths"
  | "bodies"
  | "pageEnds"
  | "lists"
  | "cache"
  | "unknownBlockAnswers"
  | "atHeadPaths"
  | "heightInPaths"
  | "atFinalizedPaths"
  | "finalViews"
>;

/** A REST answer's status and, when given, its JSON body (`reads.unknownBlockAnswers`). */
export interface UnknownBlockAnswer {
  readonly status: number;
  readonly body?: unknown;
}

/**
 * What the WebSocket relay needs to move a connection's subscriptions to another node when its own goes
 * (src/ws/subscriptions.ts): where a notification names its subscription, which subscriptions cannot
 * move, and which carry a block position, with the calls that fill a gap.
 */
export interface SubscriptionRules {
  /** The member of a notification's `params` that holds the subscription's id (`subscription`). */
  readonly idMember: string;
  /** Subscribe methods whose subscription is node state or submits something: the connection stays pinned. */
  readonly pinned: readonly string[];
  /**
   * Subscribe method → the notifications after which the node ends the subscription itself (an extrinsic's
   * final status): the relay forgets it once it has sent that one, as the client does (src/ws/subscriptions.ts).
   */
  readonly ends?: Readonly<Record<string, SubscriptionEnd>>;
  /**
   * Subscribe methods whose notification says the node's head block changed with no height to show it (a
   * Substrate runtime version): a new one ends the answers kept at the head before the client has it.
   */
  readonly headChanges: readonly string[];
  readonly kinds: readonly SubscriptionKind[];
}

/**
 * A subscription's last notification: the value at `at` in its result (the result itself when absent) is
 * one of `status`, or an object with one of them as its member (serde's enum: `"dropped"`, `{"finalized":…}`).
 */
export interface SubscriptionEnd {
  readonly at?: string;
  readonly status: readonly string[];
}

/** Subscriptions that carry a position. A subscribe call that matches none is made again, nothing filled. */
export interface SubscriptionKind {
  readonly subscribe: readonly string[];
  /** When set, only subscribe calls whose first param is this string (`eth_subscribe` `newHeads`). */
  readonly first?: string;
  /** Each notification is one block header: a gap is filled by walking back from the first new one. */
  readonly heads?: HeadsRule;
  /** Each notification is one event (a log): a gap is filled with a range query. */
  readonly events?: EventsRule;
}

export interface HeadsRule {
  /** Member of a header that holds its height, and of a header that names its parent block. */
  readonly number: string;
  readonly parent: string;
  /**
   * Member of a header that holds its own block's hash, where it has one (a Substrate header has none): a
   * header pushed at a height the label saw, with another hash, is a block replaced under the node, and
   * ends what was read at the head (label-finality.ts `blockSeen`).
   */
  readonly hash?: string;
  readonly encoding: HeadEncoding;
  /** The call that returns a header by hash; the string "{hash}" in `params` stands for the hash. */
  readonly byHash: { readonly method: string; readonly params: unknown };
  /**
   * Its headers are the node's finalized blocks: each says how final the node holds the chain, as a read at
   * the finalized tag does (label-finality.ts `finalAnswered`), so another node's older finalized block is not read next.
   */
  readonly finalized?: true;
}

export interface EventsRule {
  /** The notification method, for events the range query finds before the node pushes one. */
  readonly notification: string;
  /** Members of an event that hold its block's height and its place in the block. */
  readonly number: string;
  readonly index: string;
  /**
   * The member that holds an event's block hash: a move to a node whose block at the last height sent is
   * another block sends the events sent from the replaced one again with `removed: true` (gap-fill.ts).
   */
  readonly hash?: string;
  readonly encoding: HeadEncoding;
  /**
   * The range query: `method` with one param, the subscribe call's `filterParam`-th param (an object, or
   * {} when absent) with the members `from` and `to` set to the range's first and last height.
   */
  readonly backfill: {
    readonly method: string;
    readonly filterParam: number;
    readonly from: string;
    readonly to: string;
  };
}

/** What one mount of an endpoint serves: a JSON-RPC dialect, REST routes, or both (a bridge's GET /health). */
export interface InterfacePolicy {
  readonly id: string;
  /**
   * The family handler that serves this mount (src/families/table.ts): `jsonrpc` for a dialect at the
   * mount's root, `rest` for routes, `mixed` for a dialect at the root with HTTP routes beside it (a
   * bridge's GET /health). An endpoint's own `family` is its interface style as the product lists it
   * (test/fixtures/spec-labels.yaml), which
   * can differ: a JSON-RPC network whose interface also has a GET /status route has one mixed mount.
   */
  readonly family: FamilyName;
  readonly jsonrpc?: JsonRpcPolicy;
  readonly routes?: RouteNode;
  /** The routes that submit something (registry `writes`), compiled like `routes`: never sent twice. */
  readonly writeRoutes?: RouteNode;
  /**
   * Routes and methods whose node holds the request until something happens, up to `heldMs`, and then
   * answers anyway (registry `longPolls`: algod's wait-for-block-after, nearcore's `tx` with `wait_until`):
   * waited for that long beyond the call's deadline, never hedged, and their wait is not the node's
   * latency (upstream/call-run.ts).
   */
  readonly longPolls?: {
    readonly routes?: RouteNode;
    readonly methods?: ReadonlySet<string>;
    readonly heldMs: number;
  };
  /**
   * The member of a REST answer that holds the node's error, for an interface whose nodes answer errors
   * with a success status (registry `errorMember`); a JSON-RPC answer's is always `error`.
   */
  readonly errorMember?: string;
  /**
   * The gateway's own error bodies carry a top-level `message` beside their `error` object, where the
   * interface's nodes put their errors' text and its SDKs read it (registry `errorMessage`: algosdk shows
   * only the status of an error without one).
   */
  readonly errorMessage?: true;
  /** How its node answers a call's own errors at a 5xx status (registry `nodeErrors`, `errorStatus`). */
  readonly nodeErrors?: NodeErrors;
  /**
   * Tests of a write's answer (its envelope, or a REST body) of which any that passes says the node refused
   * it at a success status (registry `refusedWrite`): java-tron's `result: false`, stellar-rpc's `ERROR`.
   */
  readonly refusedWrite?: readonly BodyTest[];
  /** Where a REST interface's routes name a block (registry `reads.paths`), for src/answers/rest-read-need.ts. */
  readonly restReads?: RestReadRules;
  /** What one call costs in compute units (registry `computeUnits`, docs/compute-units.md). */
  readonly computeUnits: ComputeUnits;
  /**
   * Method or REST route (`POST /wallet/triggersmartcontract`) → the member paths of the contract addresses
   * it names (`[["params", "0", "to"]]`, `[["body", "contract_address"]]`; more than one where it names them
   * in several places), for a key's contract allow-list.
   */
  readonly contracts?: Readonly<Record<string, readonly (readonly string[])[]>>;
  /**
   * Method → the member path of the state it puts in place for the call (`["params", "2"]`: eth_call's
   * overrides), which runs code no contract allow-list names: refused to a key locked to its contracts.
   */
  readonly stateOverrides?: Readonly<Record<string, readonly string[]>>;
  /**
   * Method → where it takes the option that decides what its answer shows (`["params", "1", "tracer"]`), when
   * some of its values answer the state of every account the call or transaction touches (prestateTracer,
   * stateDiff): a key locked to its contracts may ask only for the values in `allow`, "" standing for the
   * option left out.
   */
  readonly stateDumps?: Readonly<Record<string, StateDumpRule>>;
}

/** Where a method's state-dumping option sits, and the values of it a key locked to its contracts may ask for. */
export interface StateDumpRule {
  readonly at: readonly string[];
  readonly allow: readonly string[];
}

/**
 * Compute units per call, compiled: by method (patterns expanded, writes filled in) and by route shape
 * (`GET /chains/{}/blocks/{}`, as the REST family names a route), else `default`; `archive` times that when
 * an archive node answered.
 */
export interface ComputeUnits {
  readonly default: number;
  readonly methods: ReadonlyMap<string, number>;
  readonly routes: ReadonlyMap<string, number>;
  readonly archive: number;
}

export interface Mount {
  /** Path prefix under the key segment; mounts are ordered longest first. */
  readonly path: string;
  readonly policy: InterfacePolicy;
  /** The head call of the mount's interface, which the prober asks this mount's upstreams. */
  readonly head: HeadCall;
  /** How the prober asks this mount's upstreams which chain they are on, where the interface says. */
  readonly chain?: ChainCall;
}

export type HeadEncoding = "integer" | "hex-quantity" | "decimal-string";

/** A call the prober sends a node, and the field of its answer it reads: a JSON-RPC method, or a REST route. */
export type ProbeCall = (
  | { readonly kind: "jsonrpc"; readonly method: string; readonly params?: unknown }
  | { readonly kind: "rest"; readonly method: HttpMethod; readonly path: string; readonly body?: unknown }
) & { readonly field: readonly string[] };

/** The call whose answer holds a node's head: a height in the registry's encoding. */
export type HeadCall = ProbeCall & { readonly encoding: HeadEncoding };

/**
 * The call whose answer names the chain a node is on (registry `chain`). With an `encoding` it is a number,
 * compared with the endpoint's `chainId`; without, text, compared with the endpoint's `chain`.
 */
export type ChainCall = ProbeCall & { readonly encoding?: HeadEncoding };

export interface DedicatedOnlyInterface {
  readonly name: string;
  readonly paths: readonly string[];
}

export interface Endpoint {
  readonly label: string;
  readonly code: string;
  readonly networkName: string;
  readonly environment: string;
  readonly nodeClass: NodeClass;
  readonly websocket: boolean;
  readonly public: boolean;
  readonly chainId?: number;
  /** The chain as its nodes name it, for a mount whose chain call answers text (registry `chain`). */
  readonly chain?: string;
  readonly family: FamilyName;
  readonly mounts: readonly Mount[];
  readonly head: HeadCall;
  readonly dedicatedOnly: readonly DedicatedOnlyInterface[];
  /** Seconds between blocks (registry `blockTime`): what turns a lag in seconds into blocks. */
  readonly blockTimeSeconds: number;
  /** What its calls cost against its interfaces' compute units (registry `computeUnitMultiplier`). */
  readonly computeUnitMultiplier: number;
  /**
   * The request body its largest write needs (registry `blobsPerTransaction`, `transactionBytes`,
   * `writeJsonBytes`): its requests may be this large, when the deployment's `maxBodyBytes` is less.
   */
  readonly bodyBytes?: number;
  /** A mainnet full endpoint's archive endpoint, where its reads of old state go (src/answers/archive.ts). */
  readonly archiveLabel?: string;
  /** Its first interface's first call in the SDK people use (registry `example`); `{url}` is the URL. */
  /** `http`: the same call for a plain http:// URL, where the SDK must be told to allow one. */
  readonly example?: { readonly sdk: string; readonly code: string; readonly http?: string };
}
