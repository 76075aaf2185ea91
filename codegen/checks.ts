import { matchRoute } from "../src/registry/match-route.js";
import { checkChainCall, checkChainIds, checkChainNames } from "./chain-ids.js";
import type { LoadedRegistry, RegistryIssue, YamlPath } from "./load.js";
import type {
  BodyTestSpec,
  InterfaceSpec,
  MethodGroups,
  NetworkSpec,
  RouteGroups,
} from "./registry-types.js";
import {
  emptyTrie,
  insertRoute,
  parseRouteTemplate,
  type RouteTemplate,
  samplePath,
  shapeOf,
  type TrieNode,
} from "./route-template.js";

const METHOD_GROUPS = ["shared", "dedicated", "websocket", "subscribe", "unsubscribe"] as const;
const ROUTE_GROUPS = ["shared", "dedicated", "stream"] as const;
/** The environments every network may have; a network names any other testnet under `testnets`. */
const BASE_ENVIRONMENTS = new Set(["mainnet", "testnet", "archive"]);

/** The rules a JSON Schema cannot express. Each issue points at the YAML node to fix. */
export function checkRegistry(registry: LoadedRegistry): RegistryIssue[] {
  const issues: RegistryIssue[] = [];
  const report = (path: YamlPath, message: string) => issues.push(registry.locate(path, message));
  const { spec } = registry;

  for (const [id, iface] of Object.entries(spec.interfaces)) {
    checkInterface(id, iface, spec.envelopes, report);
    checkChainCall(id, iface, report);
  }

  const codes = new Map<string, number>();
  const labels = new Map<string, string>();
  const chains = new Map<string, { readonly code: string; readonly label: string }>();
  spec.networks.forEach((network, n) => {
    const path: YamlPath = ["networks", n];
    const first = codes.get(network.code);
    if (first !== undefined)
      report([...path, "code"], `network code "${network.code}" is already used by networks[${first}]`);
    else codes.set(network.code, n);
    checkMounts(network, path, spec.interfaces, report);
    checkEndpoints(network, path, labels, report);
    checkChainIds(network, path, spec.interfaces, report);
    checkChainNames(network, path, spec.interfaces, report);
    checkChainsAcrossNetworks(network, path, spec.interfaces, chains, report);
    if (network.head !== undefined) checkNetworkHead(network, path, spec.interfaces, report);
    checkExample(network, path, spec.interfaces, report);
  });
  return issues;
}

type Report = (path: YamlPath, message: string) => void;

/** The customer dashboard shows every network's first call in its SDK: some interface it mounts has one. */
function checkExample(
  network: NetworkSpec,
  path: YamlPath,
  interfaces: Record<string, InterfaceSpec>,
  report: Report,
): void {
  const ids = network.mounts.flatMap((m) => (typeof m.interface === "string" ? [m.interface] : m.interface));
  if (ids.some((id) => interfaces[id] === undefined || interfaces[id]?.example !== undefined)) return;
  report(
    [...path, "mounts"],
    `network ${network.code}: none of its interfaces (${ids.join(", ")}) has an example, the first call in its SDK that the customer dashboard shows`,
  );
}

/** The methods an interface serves to someone: every group but `deny`. */
function servedMethods(iface: InterfaceSpec): Set<string> {
  return new Set(METHOD_GROUPS.flatMap((group) => iface.methods?.[group] ?? []));
}

/**
 * A chain id or chain name belongs to one network: the prober takes a node that answers it for one of the
 * network's own, so a copied line (another network's id, its genesis hash) would let that network's nodes
 * serve this one's callers. A chain named in text is another network's only where the same call names it:
 * Aptos' chain id "1" and Cardano's network magic "1" are not each other's, since no node answers both.
 */
function checkChainsAcrossNetworks(
  network: NetworkSpec,
  path: YamlPath,
  interfaces: Record<string, InterfaceSpec>,
  seen: Map<string, { readonly code: string; readonly label: string }>,
  report: Report,
): void {
  // the calls that name the network's chain in text, each its own scope
  const textCalls = new Set(
    network.mounts
      .flatMap((m) => (typeof m.interface === "string" ? [m.interface] : m.interface))
      .flatMap((id) => {
        const call = interfaces[id]?.chain;
        return call === undefined || call.method === "eth_chainId"
          ? []
          : [`${call.method ?? call.route} ${call.field}`];
      }),
  );
  network.endpoints.forEach((endpoint, e) => {
    for (const [key, value] of [
      ["chainId", endpoint.chainId],
      ["chain", endpoint.chain],
    ] as const) {
      if (value === undefined) continue;
      const name = `${key} ${typeof value === "string" ? JSON.stringify(value) : value}`;
      const scopes = key === "chain" ? [...textCalls].map((call) => `${name} (${call})`) : [name];
      const first = scopes
        .map((scope) => seen.get(scope))
        .find((s) => s !== undefined && s.code !== network.code);
      for (const scope of scopes)
        if (!seen.has(scope)) seen.set(scope, { code: network.code, label: endpoint.label });
      if (first !== undefined)
        report(
          [...path, "endpoints", e, key],
          `endpoint "${endpoint.label}" declares ${name}, which is network ${first.code}'s ("${first.label}"); each network's chains are its own`,
        );
    }
  });
}

function checkInterface(
  id: string,
  iface: InterfaceSpec,
  envelopes: Record<string, unknown>,
  report: Report,
): void {
  const path: YamlPath = ["interfaces", id];
  if (iface.family === "jsonrpc") {
    if (iface.envelope === undefined) report(path, `interface "${id}" is jsonrpc and needs an envelope`);
    else if (!(iface.envelope in envelopes)) {
      report([...path, "envelope"], `envelope "${iface.envelope}" is not defined under envelopes`);
    }
    if (iface.methods === undefined) report(path, `interface "${id}" is jsonrpc and needs methods`);
    else checkMethods(iface.methods, [...path, "methods"], report);
  } else {
    if (iface.envelope !== undefined)
      report([...path, "envelope"], `interface "${id}" is rest and takes no envelope`);
    if (iface.methods !== undefined)
      report([...path, "methods"], `interface "${id}" is rest and takes no methods`);
    if ((iface.routes?.shared ?? []).length === 0) {
      report(path, `interface "${id}" is rest and needs at least one route in routes.shared`);
    }
  }
  const trie = iface.routes ? checkRoutes(iface.routes, [...path, "routes"], report) : undefined;
  checkWrites(iface, trie, [...path, "writes"], report);
  checkLongPolls(iface, trie, [...path, "longPolls"], report);
  checkSubscriptions(iface, [...path, "subscriptions"], report);
  checkAliases(iface, [...path, "aliases"], report);
  checkReads(iface, trie, [...path, "reads"], report);
  checkComputeUnits(iface, trie, [...path, "computeUnits"], report);
  checkContracts(iface, trie, [...path, "contracts"], report);
  const served = servedMethods(iface);
  for (const name of Object.keys(iface.stateOverrides ?? {}))
    if (!served.has(name))
      report([...path, "stateOverrides", name], `"${name}" is not a method this interface serves`);
  for (const name of Object.keys(iface.stateDumps ?? {}))
    if (!served.has(name))
      report([...path, "stateDumps", name], `"${name}" is not a method this interface serves`);
  if (iface.restPostOnly !== undefined && iface.restPaths === undefined)
    report([...path, "restPostOnly"], "names calls in REST shape, but the interface has no restPaths");
  if (iface.restQuery !== undefined && iface.restPaths === undefined)
    report([...path, "restQuery"], "names calls in REST shape, but the interface has no restPaths");
  (iface.restPostOnly ?? []).forEach((name, i) => {
    if (!served.has(name))
      report([...path, "restPostOnly", i], `"${name}" is not a method this interface serves`);
  });
  if (iface.family === "jsonrpc" && iface.errorMember !== undefined)
    report(
      [...path, "errorMember"],
      `interface "${id}" is jsonrpc: its nodes' errors are the answer's \`error\` member, so it takes no errorMember`,
    );
  checkProbeCall(id, iface, "head", trie, path, report);
  checkProbeCall(id, iface, "chain", trie, path, report);
  // the generated tables hold each pattern compiled: one that is not a regular expression is refused here
  const tests: [YamlPath, BodyTestSpec | undefined][] = [
    [[...path, "nodeErrors", "answer"], iface.nodeErrors?.answer],
    [[...path, "nodeErrors", "unavailable"], iface.nodeErrors?.unavailable],
    ...(iface.refusedWrite ?? []).map((test, i): [YamlPath, BodyTestSpec] => [
      [...path, "refusedWrite", i],
      test,
    ]),
  ];
  for (const [at, test] of tests) {
    if (test?.matches === undefined) continue;
    try {
      new RegExp(test.matches);
    } catch {
      report([...at, "matches"], "is not a regular expression");
    }
  }
}

/**
 * The prober's calls (the head, and how a node names its chain) are calls the interface serves to every
 * caller: a JSON-RPC interface's are methods in methods.shared, a REST interface's concrete routes its
 * routes.shared reaches.
 */
function checkProbeCall(
  id: string,
  iface: InterfaceSpec,
  key: "head" | "chain",
  trie: TrieNode | undefined,
  path: YamlPath,
  report: Report,
): void {
  const call = iface[key];
  if (call === undefined) return;
  const at: YamlPath = [...path, key];
  if (iface.family === "jsonrpc") {
    if (call.method === undefined) report(at, `interface "${id}" is jsonrpc; its ${key} needs a method`);
    else if (iface.methods && !iface.methods.shared.includes(call.method))
      report([...at, "method"], `${key} method "${call.method}" is not in methods.shared`);
    return;
  }
  if (call.route === undefined) {
    report(at, `interface "${id}" is rest; its ${key} needs a route`);
    return;
  }
  const route = parseOrReport(call.route, [...at, "route"], report);
  if (route?.segments.some((s) => s.kind !== "static"))
    report([...at, "route"], `${key} route "${call.route}" must be a concrete path, without parameters`);
  if (route && trie && !reaches(trie, route))
    report([...at, "route"], `${key} route "${call.route}" is not allowed by routes.shared`);
}

/** Each write is a method the interface allows, or a route (`METHOD /path`) its routes reach. */
function checkWrites(iface: InterfaceSpec, trie: TrieNode | undefined, path: YamlPath, report: Report): void {
  const allowed = servedMethods(iface);
  (iface.writes ?? []).forEach((text, i) => {
    if (!isRouteText(text)) {
      if (!allowed.has(text)) report([...path, i], `write "${text}" is not a method this interface allows`);
      return;
    }
    const route = parseOrReport(text, [...path, i], report);
    if (route !== undefined && (trie === undefined || !reaches(trie, route)))
      report([...path, i], `write "${text}" is not a route this interface allows`);
  });
}

/**
 * Each of a REST interface's atHeadPaths (or a JSON-RPC interface's, for its HTTP routes) is the shape, or a
 * prefix of the shape, of a route it serves.
 */
function checkAtHeadPaths(iface: InterfaceSpec, path: YamlPath, report: Report): void {
  const prefixes = iface.reads?.atHeadPaths;
  if (prefixes === undefined) return;
  if (iface.family !== "rest" && iface.routes === undefined) {
    report(
      path,
      "a jsonrpc interface's reads at the head are its atHead methods (atHeadPaths: its HTTP routes')",
    );
    return;
  }
  const shapes = routeShapes(iface);
  prefixes.forEach((prefix, i) => {
    if (!shapes.some((shape) => shape === prefix || shape.startsWith(`${prefix}/`)))
      report([...path, i], `"${prefix}" is the shape of no route this interface serves (a parameter is {})`);
  });
}

/** The shapes of the routes an interface serves; a stream's first element may be the node's head too (Octez's /monitor/heads). */
function routeShapes(iface: InterfaceSpec): string[] {
  return ROUTE_GROUPS.flatMap((group) =>
    (iface.routes?.[group] ?? []).flatMap((text) => {
      try {
        return [shapeOf(parseRouteTemplate(text))];
      } catch {
        return [];
      }
    }),
  );
}

/**
 * Each of a REST interface's heightInPaths is one of its atHeadPaths' reads, or a route under a block (`paths`),
 * whose answer it learns from when the block is the head.
 */
function checkHeightInPaths(iface: InterfaceSpec, path: YamlPath, report: Report): void {
  const heights = iface.reads?.heightInPaths;
  if (heights === undefined) return;
  if (iface.family !== "rest" && iface.routes === undefined) {
    report(
      path,
      "a jsonrpc interface's answers show their heights by heightIn (heightInPaths: its HTTP routes')",
    );
    return;
  }
  const prefixes = [...(iface.reads?.atHeadPaths ?? []), ...Object.keys(iface.reads?.paths ?? {})];
  // the gateway looks a route's shape up in heightInPaths as it is: one that is no route's is never read
  const shapes = routeShapes(iface);
  for (const shape of Object.keys(heights))
    if (!shapes.includes(shape))
      report(
        [...path, shape],
        `"${shape}" is the shape of no route this interface serves (a parameter is {})`,
      );
    else if (!prefixes.some((prefix) => shape === prefix || shape.startsWith(`${prefix}/`)))
      report(
        [...path, shape],
        `"${shape}" is not a read at the head (reads.atHeadPaths) nor under a block (reads.paths)`,
      );
}

/**
 * Each long-poll route is a read the interface's routes reach, and not a stream or a write; each method,
 * one the interface serves (a write among them is held and, as every write, never sent twice).
 */
function checkLongPolls(
  iface: InterfaceSpec,
  trie: TrieNode | undefined,
  path: YamlPath,
  report: Report,
): void {
  const served = servedMethods(iface);
  (iface.longPolls?.methods ?? []).forEach((method, i) => {
    if (!served.has(method))
      report([...path, "methods", i], `long poll "${method}" is not a method this interface serves`);
  });
  const writes = new Set(iface.writes ?? []);
  const streams = new Set(iface.routes?.stream ?? []);
  (iface.longPolls?.routes ?? []).forEach((text, i) => {
    const at: YamlPath = [...path, "routes", i];
    const route = parseOrReport(text, at, report);
    if (route !== undefined && (trie === undefined || !reaches(trie, route)))
      report(at, `long poll "${text}" is not a route this interface allows`);
    else if (writes.has(text)) report(at, `long poll "${text}" is a write: a write is never held`);
    else if (streams.has(text)) report(at, `long poll "${text}" is a stream already`);
  });
}

/**
 * Compute units (docs/compute-units.md) name methods the interface serves (a `prefix*` at least one) and
 * routes its routes reach.
 */
function checkComputeUnits(
  iface: InterfaceSpec,
  trie: TrieNode | undefined,
  path: YamlPath,
  report: Report,
): void {
  const units = iface.computeUnits;
  if (units === undefined) return;
  const served = servedMethods(iface);
  for (const name of Object.keys(units.methods ?? {})) {
    const known = name.endsWith("*")
      ? [...served].some((m) => m.startsWith(name.slice(0, -1)))
      : served.has(name);
    if (!known) report([...path, "methods", name], `"${name}" is not a method this interface serves`);
  }
  for (const text of Object.keys(units.routes ?? {})) {
    const route = parseOrReport(text, [...path, "routes", text], report);
    if (route !== undefined && (trie === undefined || !reaches(trie, route)))
      report([...path, "routes", text], `"${text}" is not a route this interface serves`);
  }
}

/**
 * Where a key's contract allow-list looks (docs/plans.md): a JSON-RPC interface's own methods, in their
 * params; a REST interface's routes, in their bodies.
 */
function checkContracts(
  iface: InterfaceSpec,
  trie: TrieNode | undefined,
  path: YamlPath,
  report: Report,
): void {
  const served = servedMethods(iface);
  for (const [name, places] of Object.entries(iface.contracts ?? {}))
    for (const where of [places].flat())
      checkContractPlace(name, where, served, trie, [...path, name], report);
}

/** One place where a method or route names contracts: a method's in its params, a route's in its body, path or query. */
function checkContractPlace(
  name: string,
  where: string,
  served: ReadonlySet<string>,
  trie: TrieNode | undefined,
  at: YamlPath,
  report: Report,
): void {
  const rest = name.includes(" ");
  if (rest) {
    const route = parseOrReport(name, at, report);
    if (route !== undefined && (trie === undefined || !reaches(trie, route)))
      report(at, `"${name}" is not a route this interface serves`);
  } else if (!served.has(name)) report(at, `"${name}" is not a method this interface serves`);
  if (rest ? where.startsWith("params.") : !where.startsWith("params."))
    report(
      at,
      `a ${rest ? "route's" : "method's"} address is in its ${rest ? "body, path or query" : "params"}`,
    );
  // a path's address is one of the route's own parameters, named as the route names it
  const param = where.startsWith("path.") ? where.split(".") : undefined;
  if (param !== undefined && rest) {
    const route = parseOrReport(name, at, report);
    const named = route?.segments.some((s) => s.kind === "param" && s.name === param[1]);
    if (route !== undefined && (param.length !== 2 || !named))
      report(at, `"${where}" is not one of the route's {parameters}, as path.<its name>`);
  }
}

/**
 * Read rules (docs/upstreams.md, "Answers across nodes") are for a JSON-RPC interface, and name methods it
 * serves; an answer's height is read only from a method whose block param is known.
 */
function checkReads(iface: InterfaceSpec, trie: TrieNode | undefined, path: YamlPath, report: Report): void {
  const rules = iface.reads;
  if (rules === undefined) return;
  // a JSON-RPC interface's reads name where its calls name a block, or, where none does, which read at the head
  if (iface.family === "jsonrpc" && rules.at === undefined && rules.atHead === undefined)
    report(path, "a jsonrpc interface's reads need at or atHead");
  if (
    iface.family === "rest" &&
    (rules.at !== undefined || (rules.paths === undefined && rules.bodies === undefined))
  )
    report(path, "a rest interface's reads name blocks by paths or bodies, not at");
  // a denied method is served to nobody: naming one is a typo or a method the registry meant to allow
  const served = servedMethods(iface);
  const at = rules.at ?? {};
  for (const method of Object.keys(at))
    if (!served.has(method))
      report([...path, "at", method], `"${method}" is not one of the interface's methods`);
  for (const method of Object.keys(rules.when ?? {}))
    if (at[method] !== "params")
      report(
        [...path, "when", method],
        `"${method}" does not name its block by its params object in reads.at`,
      );
  for (const method of rules.atHead ?? [])
    if (!served.has(method))
      report([...path, "atHead", method], `"${method}" is not one of the interface's methods`);
  for (const method of rules.throughHead ?? [])
    if (!(rules.atHead ?? []).includes(method) || at[method] === undefined)
      report(
        [...path, "throughHead", method],
        `"${method}" is not one of the interface's atHead methods with a block in at`,
      );
  for (const method of rules.atFinalized ?? [])
    if (!(rules.atHead ?? []).includes(method))
      report([...path, "atFinalized", method], `"${method}" is not one of the interface's atHead methods`);
  for (const method of rules.headHashes ?? [])
    if (!(rules.atHead ?? []).includes(method))
      report([...path, "headHashes", method], `"${method}" is not one of the interface's atHead methods`);
  for (const [method, range] of Object.entries(rules.ranges ?? {})) {
    // bounds that are params of their own are both positions in the params list, which is never split
    const positions = [range.from, range.to].filter((bound) => typeof bound === "number").length;
    if (positions === 0) continue;
    if (positions === 1 || range.param !== "params")
      report(
        [...path, "ranges", method],
        "positional bounds need both from and to as positions, and param: params",
      );
    if (range.hash !== undefined || range.pages !== undefined || range.watches !== undefined)
      report([...path, "ranges", method], "positional bounds take no hash, pages nor watches");
  }
  // a filter's calls go to the node that made it: a name that is no method would leave its polls anywhere
  (rules.handles?.make ?? []).forEach((method, i) => {
    if (!served.has(method))
      report([...path, "handles", "make", i], `"${method}" is not one of the interface's methods`);
  });
  for (const method of Object.keys(rules.handles?.use ?? {}))
    if (!served.has(method))
      report([...path, "handles", "use", method], `"${method}" is not one of the interface's methods`);
  for (const method of rules.handles?.scans ?? [])
    if (rules.handles?.use[method] === undefined)
      report([...path, "handles", "scans", method], `"${method}" is not one of handles.use`);
  for (const method of rules.archive?.state ?? [])
    if (at[method] === undefined)
      report([...path, "archive", "state"], `"${method}" has no block param in reads.at`);
  for (const method of rules.archive?.history ?? [])
    if (!served.has(method))
      report([...path, "archive", "history"], `"${method}" is not one of the interface's methods`);
    else if (rules.archive?.state.includes(method))
      report([...path, "archive", "history"], `"${method}" is in archive.state already`);
  // an answer that may be of history dropped is asked of the archive for a history read alone
  if (rules.archive?.unknownHistory !== undefined && (rules.archive.history ?? []).length === 0)
    report([...path, "archive", "unknownHistory"], "unknownHistory needs history reads to apply to");
  for (const method of Object.keys(rules.heightIn ?? {}))
    if (
      at[method] === undefined &&
      !(rules.atHead ?? []).includes(method) &&
      rules.ranges?.[method] === undefined
    )
      report(
        [...path, "heightIn", method],
        `"${method}" has no block param in reads.at, nor is it in atHead or ranges`,
      );
  for (const method of Object.keys(rules.heightUnless ?? {}))
    if (rules.heightIn?.[method] === undefined)
      report([...path, "heightUnless", method], `"${method}" is not one of the interface's heightIn methods`);
  for (const method of Object.keys(rules.pageSizes ?? {}))
    if (!served.has(method))
      report([...path, "pageSizes", method], `"${method}" is not one of the interface's methods`);
  // a call sent with its params by name is read by these names: a method the interface does not serve never is
  for (const method of Object.keys(rules.paramNames ?? {}))
    if (!served.has(method))
      report([...path, "paramNames", method], `"${method}" is not one of the interface's methods`);
  for (const method of Object.keys(rules.positionalAt ?? {}))
    if (at[method] !== "params")
      report(
        [...path, "positionalAt", method],
        `"${method}" does not read its block from its params object (reads.at)`,
      );
  checkCacheRules(rules, served, new Set(iface.writes), trie, [...path, "cache"], report);
  checkAtHeadPaths(iface, [...path, "atHeadPaths"], report);
  checkHeightInPaths(iface, [...path, "heightInPaths"], report);
  // the REST rules the gateway looks a route's shape up in (exactly, or by a prefix of it): one that is no
  // route's shape names no read, and its rule never applies
  const shapes = routeShapes(iface);
  const noRoute = (at: YamlPath, shape: string) =>
    report(at, `"${shape}" is the shape of no route this interface serves (a parameter is {})`);
  const under = (prefix: string) => shapes.some((s) => s === prefix || s.startsWith(`${prefix}/`));
  for (const prefix of Object.keys(rules.paths ?? {}))
    if (!under(prefix)) noRoute([...path, "paths", prefix], prefix);
  (rules.finalViews ?? []).forEach((prefix, i) => {
    if (!under(prefix)) noRoute([...path, "finalViews", i], prefix);
  });
  for (const key of ["atFinalizedPaths", "pageEnds"] as const)
    for (const shape of Object.keys(rules[key] ?? {}))
      if (!shapes.includes(shape)) noRoute([...path, key, shape], shape);
  if (rules.unknownBlockAnswers !== undefined && iface.family !== "rest")
    report(
      [...path, "unknownBlockAnswers"],
      "a jsonrpc interface's unknown blocks are its unknownBlock texts",
    );
  if (rules.unknownBlock !== undefined && iface.family === "rest")
    report([...path, "unknownBlock"], "a rest interface's unknown blocks are its unknownBlockAnswers");
  if (rules.unknownBlockAnswers !== undefined && rules.block.hashPattern === undefined)
    report(
      [...path, "unknownBlockAnswers"],
      "names answers to reads by hash, but block.hashPattern names no hash",
    );
  // a settled tag is a head tag the node resolves below its head: one that is no head tag is read as a height
  for (const tag of rules.block.settledTags ?? [])
    if (!rules.block.headTags.includes(tag))
      report([...path, "block", "settledTags"], `"${tag}" is not one of block.headTags`);
  const finalizedTag = rules.block.finalizedTag;
  if (finalizedTag !== undefined && !(rules.block.settledTags ?? []).includes(finalizedTag))
    report([...path, "block", "finalizedTag"], `"${finalizedTag}" is not one of block.settledTags`);
  if (
    finalizedTag !== undefined &&
    (rules.cache?.finalized === undefined || "depth" in rules.cache.finalized)
  )
    report(
      [...path, "block", "finalizedTag"],
      "names a tag, but reads.cache.finalized names no call to read it",
    );
  for (const field of ["hashPattern", "headRelative"] as const) {
    const pattern = rules.block[field];
    if (pattern === undefined) continue;
    try {
      new RegExp(pattern);
    } catch {
      report([...path, "block", field], "is not a regular expression");
    }
  }
}

/**
 * Cache rules (docs/cache.md) name methods the interface serves; a method cached by the block it reads
 * must have a block param or a range to read it from. A REST interface's finality is a depth, or a
 * concrete route it serves (the prober asks it of every node); a JSON-RPC one's a depth or its calls.
 */
function checkCacheRules(
  rules: NonNullable<InterfaceSpec["reads"]>,
  served: ReadonlySet<string>,
  writes: ReadonlySet<string>,
  trie: TrieNode | undefined,
  path: YamlPath,
  report: Report,
): void {
  const cache = rules.cache;
  if (cache === undefined) return;
  if (rules.paths !== undefined || rules.bodies !== undefined) {
    // a REST interface: block reads by the paths or bodies that name a block
    for (const prefix of cache.atBlock ?? [])
      if (rules.paths?.[prefix] === undefined && rules.bodies?.[prefix] === undefined)
        report(
          [...path, "atBlock"],
          `"${prefix}" is not a prefix in reads.paths nor a route in reads.bodies`,
        );
    for (const shape of cache.always ?? [])
      if (!shape.startsWith("GET /")) report([...path, "always"], `"${shape}" is not a GET route shape`);
    const finalized = cache.finalized;
    if (finalized !== undefined && !("depth" in finalized) && !("route" in finalized))
      report([...path, "finalized"], "a rest interface's finalized height is a depth or a route");
    const concrete = (field: "finalized" | "headBlock", text: string) => {
      const route = parseOrReport(text, [...path, field, "route"], report);
      if (route?.segments.some((s) => s.kind !== "static"))
        report([...path, field, "route"], `"${text}" must be a concrete path, without parameters`);
      else if (route !== undefined && (trie === undefined || !reaches(trie, route)))
        report([...path, field, "route"], `"${text}" is not a route this interface serves`);
    };
    if (finalized !== undefined && "route" in finalized) concrete("finalized", finalized.route);
    const headBlock = cache.headBlock;
    if (headBlock !== undefined && !("route" in headBlock))
      report([...path, "headBlock"], "a rest interface's head block is a route");
    if (headBlock !== undefined && "route" in headBlock) concrete("headBlock", headBlock.route);
    if (cache.atHead !== undefined)
      report([...path, "atHead"], "a rest interface's answer at the head is its head call's");
    return;
  }
  const named = [
    ...(cache.always ?? []),
    ...(cache.atHead ?? []),
    ...(cache.atBlock ?? []),
    ...Object.keys(cache.blockIn ?? {}),
  ];
  for (const method of named)
    if (!served.has(method)) report(path, `"${method}" is not one of the interface's methods`);
  // the gateway never keeps a write's answer (each one reaches a node): a rule naming one would say otherwise
  for (const list of ["always", "atHead", "atBlock"] as const)
    (cache[list] ?? []).forEach((method, i) => {
      if (writes.has(method))
        report(
          [...path, list, i],
          `"${method}" is a write: a write is never kept, and every one reaches a node`,
        );
    });
  for (const method of Object.keys(cache.blockIn ?? {}))
    if (writes.has(method))
      report(
        [...path, "blockIn", method],
        `"${method}" is a write: a write is never kept, and every one reaches a node`,
      );
  for (const method of Object.keys(cache.hashHeightIn ?? {}))
    if (!cache.atBlock?.includes(method))
      report([...path, "hashHeightIn"], `"${method}" is not one of the cache's atBlock methods`);
  for (const method of cache.atBlock ?? [])
    if (!writes.has(method) && rules.at?.[method] === undefined && rules.ranges?.[method] === undefined)
      report([...path, "atBlock"], `"${method}" has no block param in reads.at nor a range in reads.ranges`);
  const finalized = cache.finalized;
  if (finalized !== undefined && "route" in finalized)
    report([...path, "finalized"], "a jsonrpc interface's finalized height is a depth or its calls");
  const finalityCalls =
    finalized === undefined || "depth" in finalized || "route" in finalized ? [] : [finalized];
  if (finalized !== undefined && "heightBy" in finalized) finalityCalls.push(finalized.heightBy);
  for (const call of finalityCalls)
    if (!served.has(call.method))
      report([...path, "finalized"], `"${call.method}" is not one of the interface's methods`);
  const headBlock = cache.headBlock;
  if (headBlock !== undefined && "route" in headBlock)
    report([...path, "headBlock"], "a jsonrpc interface's head block is one of its calls");
  else if (headBlock !== undefined)
    for (const method of [headBlock.method, headBlock.headerBy?.method])
      if (method !== undefined && !served.has(method))
        report([...path, "headBlock"], `"${method}" is not one of the interface's methods`);
  if (cache.foldCase !== undefined) {
    try {
      new RegExp(cache.foldCase);
    } catch {
      report([...path, "foldCase"], "is not a regular expression");
    }
  }
}

/**
 * An alias and the method it is are both the interface's, with one access (a dedicated-only method's alias
 * is dedicated-only too), and the method is no alias itself: a call resolves to its own name in one step.
 */
function checkAliases(iface: InterfaceSpec, path: YamlPath, report: Report): void {
  const access = new Map<string, string>();
  for (const [group, names] of Object.entries(iface.methods ?? {}))
    for (const name of names) access.set(name, group);
  const aliases = iface.aliases ?? {};
  for (const [alias, primary] of Object.entries(aliases)) {
    if (!access.has(alias)) report([...path, alias], `"${alias}" is not a method of the interface`);
    else if (!access.has(primary)) report([...path, alias], `"${primary}" is not a method of the interface`);
    else if (access.get(alias) !== access.get(primary))
      report(
        [...path, alias],
        `"${alias}" is in methods.${access.get(alias)}, "${primary}" in methods.${access.get(primary)}`,
      );
    if (Object.hasOwn(aliases, primary) || alias === primary)
      report([...path, alias], `"${primary}" is an alias itself`);
  }
}

/**
 * Subscription rules name the interface's own subscribe methods, and the calls that fill a gap are
 * methods it serves to every caller: the relay sends them on the caller's behalf.
 */
function checkSubscriptions(iface: InterfaceSpec, path: YamlPath, report: Report): void {
  const rules = iface.subscriptions;
  if (rules === undefined) return;
  const subscribe = new Set(iface.methods?.subscribe ?? []);
  const shared = new Set(iface.methods?.shared ?? []);
  (rules.pinned ?? []).forEach((name, i) => {
    if (!subscribe.has(name)) report([...path, "pinned", i], `"${name}" is not in methods.subscribe`);
  });
  (rules.headChanges ?? []).forEach((name, i) => {
    if (!subscribe.has(name)) report([...path, "headChanges", i], `"${name}" is not in methods.subscribe`);
  });
  // a subscription that ends is forgotten at its last notification: none may be held back for a gap fill
  const positioned = new Set(rules.kinds.flatMap((kind) => kind.subscribe));
  for (const name of Object.keys(rules.ends ?? {})) {
    if (!subscribe.has(name)) report([...path, "ends", name], `"${name}" is not in methods.subscribe`);
    if (positioned.has(name))
      report([...path, "ends", name], `"${name}" carries heads or events: it cannot end`);
  }
  rules.kinds.forEach((kind, k) => {
    kind.subscribe.forEach((name, i) => {
      if (!subscribe.has(name))
        report([...path, "kinds", k, "subscribe", i], `"${name}" is not in methods.subscribe`);
    });
    const fills = [
      ["heads", kind.heads?.byHash.method],
      ["events", kind.events?.backfill.method],
    ] as const;
    for (const [rule, method] of fills) {
      if (method !== undefined && !shared.has(method))
        report([...path, "kinds", k, rule], `"${method}" is not in methods.shared`);
    }
    if (kind.heads !== undefined && kind.events !== undefined)
      report([...path, "kinds", k], "a kind carries heads or events, not both");
  });
}

/** A write names a route (`POST /transactions`) or, without a path, a JSON-RPC method. */
export function isRouteText(text: string): boolean {
  return /^[A-Z|]+ \//.test(text);
}

function checkMethods(methods: MethodGroups, path: YamlPath, report: Report): void {
  const seen = new Map<string, string>();
  for (const group of METHOD_GROUPS) {
    (methods[group] ?? []).forEach((name, i) => {
      const other = seen.get(name);
      if (other !== undefined)
        report([...path, group, i], `method "${name}" is listed in both ${other} and ${group}`);
      else seen.set(name, group);
    });
  }
  (methods.deny ?? []).forEach((pattern, i) => {
    const matcher = globMatcher(pattern);
    for (const [name, group] of seen) {
      if (matcher(name))
        report(
          [...path, "deny", i],
          `method "${name}" is both allowed (${group}) and denied by "${pattern}"`,
        );
    }
  });
}

function checkRoutes(routes: RouteGroups, path: YamlPath, report: Report): TrieNode {
  const allowed = emptyTrie();
  const groupOf = new Map<string, string>();
  for (const group of ROUTE_GROUPS) {
    (routes[group] ?? []).forEach((text, i) => {
      const route = parseOrReport(text, [...path, group, i], report);
      if (route === undefined) return;
      const shape = shapeOf(route);
      for (const method of route.methods) {
        const key = `${method} ${shape}`;
        const other = groupOf.get(key);
        if (other !== undefined)
          report([...path, group, i], `route "${method} ${shape}" is listed in both ${other} and ${group}`);
        else groupOf.set(key, group);
      }
      insertRoute(allowed, route, group);
    });
  }
  (routes.deny ?? []).forEach((text, i) => {
    const route = parseOrReport(text, [...path, "deny", i], report);
    if (route && reaches(allowed, route)) {
      report([...path, "deny", i], `denied route "${text}" is reachable through an allowed route`);
    }
  });
  return allowed;
}

function checkMounts(
  network: NetworkSpec,
  path: YamlPath,
  interfaces: Record<string, InterfaceSpec>,
  report: Report,
): void {
  const paths = new Set<string>();
  network.mounts.forEach((mount, m) => {
    const at: YamlPath = [...path, "mounts", m];
    if (paths.has(mount.path))
      report([...at, "path"], `mount path "${mount.path}" is used twice in network ${network.code}`);
    paths.add(mount.path);
    const ids = typeof mount.interface === "string" ? [mount.interface] : mount.interface;
    const found = ids.flatMap((id) => {
      const iface = interfaces[id];
      if (iface === undefined)
        report([...at, "interface"], `interface "${id}" is not defined under interfaces`);
      return iface ? [{ id, iface }] : [];
    });
    if (found.length < 2) return;
    // One mount may merge several JSON-RPC dialects only when they frame requests alike.
    const first = found[0] as { id: string; iface: InterfaceSpec };
    for (const { id, iface } of found.slice(1)) {
      if (iface.family !== "jsonrpc" || first.iface.family !== "jsonrpc") {
        report([...at, "interface"], `only jsonrpc interfaces can share a mount ("${first.id}" and "${id}")`);
      } else if (iface.envelope !== first.iface.envelope) {
        report(
          [...at, "interface"],
          `interfaces "${first.id}" and "${id}" share a mount but use envelopes "${first.iface.envelope}" and "${iface.envelope}"`,
        );
      }
      const denied = (iface.methods?.deny ?? []).map(globMatcher);
      for (const group of METHOD_GROUPS) {
        for (const name of first.iface.methods?.[group] ?? []) {
          if (denied.some((m) => m(name)))
            report(
              [...at, "interface"],
              `method "${name}" of "${first.id}" is denied by "${id}" on the same mount`,
            );
        }
      }
    }
  });
}

function checkEndpoints(
  network: NetworkSpec,
  path: YamlPath,
  labels: Map<string, string>,
  report: Report,
): void {
  let mainnets = 0;
  const testnets = network.testnets ?? [];
  const used = new Set<string>();
  network.endpoints.forEach((endpoint, e) => {
    const at: YamlPath = [...path, "endpoints", e];
    const owner = labels.get(endpoint.label);
    if (owner !== undefined)
      report([...at, "label"], `label "${endpoint.label}" is already used by network ${owner}`);
    else labels.set(endpoint.label, network.code);

    if (!BASE_ENVIRONMENTS.has(endpoint.environment) && !testnets.includes(endpoint.environment)) {
      const named = testnets.length === 0 ? "" : `, ${testnets.join(", ")}`;
      report(
        [...at, "environment"],
        `endpoint "${endpoint.label}": environment "${endpoint.environment}" is not one of mainnet, testnet, archive${named}; name a testnet under the network's testnets`,
      );
    }
    used.add(endpoint.environment);
    const expected = expectedLabel(network.code, endpoint.environment);
    if (endpoint.label !== expected && endpoint.labelRule === undefined) {
      report(
        [...at, "label"],
        `label "${endpoint.label}" breaks the label rules for environment ${endpoint.environment} (expected "${expected}"); declare labelRule to make an exception`,
      );
    }
    if (endpoint.label === expected && endpoint.labelRule !== undefined) {
      report([...at, "labelRule"], `label "${endpoint.label}" follows the rules; remove labelRule`);
    }
    if ((endpoint.environment === "archive") !== (endpoint.nodeClass === "archive")) {
      report(
        [...at, "nodeClass"],
        `endpoint "${endpoint.label}": an archive environment and the archive node class go together`,
      );
    }
    if (endpoint.public === true && endpoint.environment !== "mainnet") {
      report([...at, "public"], `endpoint "${endpoint.label}": public no-key access is only for a mainnet`);
    }
    if (endpoint.environment === "mainnet") mainnets += 1;
  });
  testnets.forEach((name, i) => {
    if (BASE_ENVIRONMENTS.has(name))
      report(
        [...path, "testnets", i],
        `network ${network.code} names testnet "${name}", which is a base environment; list only named testnets`,
      );
    else if (!used.has(name))
      report(
        [...path, "testnets", i],
        `network ${network.code} names testnet "${name}" but no endpoint serves it`,
      );
  });
  if (network.mainnet === false && mainnets > 0) {
    report([...path, "mainnet"], `network ${network.code} says mainnet: false but lists a mainnet endpoint`);
  }
  if (network.mainnet !== false && mainnets !== 1) {
    report(
      [...path, "endpoints"],
      `network ${network.code} needs exactly one mainnet endpoint (or mainnet: false), found ${mainnets}`,
    );
  }
}

function checkNetworkHead(
  network: NetworkSpec,
  path: YamlPath,
  interfaces: Record<string, InterfaceSpec>,
  report: Report,
): void {
  const head = network.head;
  if (head === undefined) return;
  const mounted = network.mounts.flatMap((mount) =>
    (typeof mount.interface === "string" ? [mount.interface] : mount.interface).flatMap((id) => {
      const iface = interfaces[id];
      return iface ? [{ mount, iface, id }] : [];
    }),
  );
  // the same call as an interface's own head call reads the same member, in the same encoding: a field or
  // an encoding of its own is a typo that would leave every node's head unknown
  for (const { iface, id } of mounted) {
    const own = iface.head;
    const same = head.method !== undefined ? own.method === head.method : own.route === head.route;
    if (!same) continue;
    for (const key of ["field", "encoding"] as const)
      if (own[key] !== head[key])
        report(
          [...path, "head", key],
          `head ${key} "${head[key]}" differs from interface ${id}'s head, the same call, which reads ${key} "${own[key]}"`,
        );
    break;
  }
  if (head.method !== undefined) {
    const method = head.method;
    if (!mounted.some(({ iface }) => iface.methods?.shared.includes(method)))
      report(
        [...path, "head", "method"],
        `head method "${method}" is not shared by any interface of network ${network.code}`,
      );
    return;
  }
  if (head.route === undefined) return;
  const route = parseOrReport(head.route, [...path, "head", "route"], report);
  if (route === undefined) return;
  if (route.segments.some((s) => s.kind !== "static")) {
    report(
      [...path, "head", "route"],
      `head route "${head.route}" must be a concrete path, without parameters`,
    );
    return;
  }
  const ignore: Report = () => {};
  const served = mounted.some(
    ({ mount, iface }) =>
      mount.path === "/" &&
      iface.routes !== undefined &&
      reaches(checkRoutes(iface.routes, [], ignore), route),
  );
  if (!served)
    report(
      [...path, "head", "route"],
      `head route "${head.route}" is not shared by any REST interface mounted at / on network ${network.code}`,
    );
}

/**
 * The label rules: a mainnet's label is the network code, every other environment's is
 * `<code>-<environment>`: `<code>-testnet`, `<code>-archive`, and `<code>-<name>` for a named testnet.
 */
export function expectedLabel(code: string, environment: string): string {
  return environment === "mainnet" ? code : `${code}-${environment}`;
}

/** `admin_*` style patterns: `*` stands for any run of characters, everything else is literal. */
export function globMatcher(pattern: string): (name: string) => boolean {
  const parts = pattern.split("*");
  if (parts.length === 1) return (name) => name === pattern;
  return (name) => {
    const head = parts[0] as string;
    const tail = parts[parts.length - 1] as string;
    if (!name.startsWith(head) || !name.endsWith(tail) || name.length < head.length + tail.length)
      return false;
    let from = head.length;
    for (const middle of parts.slice(1, -1)) {
      const found = name.indexOf(middle, from);
      if (found < 0 || found + middle.length > name.length - tail.length) return false;
      from = found + middle.length;
    }
    return true;
  };
}

function parseOrReport(text: string, path: YamlPath, report: Report): RouteTemplate | undefined {
  try {
    return parseRouteTemplate(text);
  } catch (error) {
    report(path, (error as Error).message);
    return undefined;
  }
}

/** Whether the allowed trie would let a sample request for this route through. */
function reaches(trie: TrieNode, route: RouteTemplate): boolean {
  const segments = samplePath(route);
  return route.methods.some((method) => matchRoute(trie, method, segments).kind === "match");
}
