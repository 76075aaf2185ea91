import { createHash } from "node:crypto";
import { isIP } from "node:net";
import { domainToASCII } from "node:url";
import { keccak_256 } from "@noble/hashes/sha3";
import bs58 from "bs58";
import bs58check from "bs58check";
import { GatewayError } from "../errors/table.js";
import { addressBlock, addressMatcher } from "../http/address-blocks.js";
import { patternOf, starShapes } from "../plans/plan-terms.js";
import { type JwtKey, JwtVerifier, publicKeyOf } from "./jwt.js";

/**
 * What a key's owner may restrict it to (docs/plans.md, "Key settings"). No list: anything passes. Once a
 * list is set every call must pass it; lists of different kinds all apply, entries of one list are
 * alternatives (Infura's rule). At most MAX_ENTRIES per list.
 */
export interface KeySettings {
  /** `Origin` values: `https://app.example.com`, `https://*.example.com`, or without the scheme. */
  readonly origins?: readonly string[];
  /** Client addresses and CIDR blocks: `203.0.113.7`, `203.0.113.0/24`, `2001:db8::/32`. */
  readonly ips?: readonly string[];
  /** JSON-RPC methods, or REST routes as `GET /chains/{}/blocks/{}`; `*` matches any run of characters. */
  readonly methods?: readonly string[];
  /** Contract addresses a call may name where the registry says one sits (`eth_call`'s `to`). */
  readonly contracts?: readonly string[];
  /** Public keys (PEM, RSA or P-256) of which one must sign a JWT sent with every call. */
  readonly jwtKeys?: readonly JwtKey[];
}

const MAX_ENTRIES = 30;

const KINDS = ["origins", "ips", "methods", "contracts", "jwtKeys"] as const;
// a web page's origin, or a browser extension's (its id as the host), as the Origin header carries it
const ORIGIN =
  /^(?:(https?|chrome-extension|moz-extension|safari-web-extension):\/\/)?(\*\.)?([a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::(\d{1,5}))?$/;
const METHOD = /^[A-Za-z0-9_.*:-]+(?: \/[A-Za-z0-9_.{}*/:-]*)?$/;
const ROUTE_VERB = /^(?:GET|HEAD|POST|PUT|PATCH|DELETE|\*)$/;
// An address as a network writes it: EVM hex, base58 (25 to 64 characters), or bare hex.
// a 20-byte address (0x and 40 hex digits, base58, a version byte and 40 hex digits), or a field element's
// (0x and 50 to 64 hex digits: a hash, written with its leading zeros or without the few it may have)
const CONTRACT =
  /^(?:0x(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{50,64})|[1-9A-HJ-NP-Za-km-z]{25,64}|[0-9a-fA-F]{40,64})$/;

/**
 * The settings a customer sent, checked: INVALID_FIELD naming the list and the entry that is wrong. Empty
 * lists are dropped (an empty list would refuse everything, which no one means: eRPC's `maxCount: 0`).
 */
export function checkedSettings(
  input: unknown,
  knownMethods?: ReadonlySet<string>,
  /** What a refused method's reason gives as examples: the key's own networks' methods (knownMethods without). */
  examples: ReadonlySet<string> | undefined = knownMethods,
): KeySettings {
  if (typeof input !== "object" || input === null || Array.isArray(input))
    throw new GatewayError("INVALID_FIELD", { field: "settings", reason: "an object of lists" });
  const settings: Record<string, unknown> = {};
  for (const [kind, value] of Object.entries(input)) {
    if (!(KINDS as readonly string[]).includes(kind))
      throw new GatewayError("INVALID_FIELD", { field: kind, reason: `not one of ${KINDS.join(", ")}` });
    if (value === null || value === undefined) continue;
    if (!Array.isArray(value)) throw new GatewayError("INVALID_FIELD", { field: kind, reason: "a list" });
    if (value.length > MAX_ENTRIES)
      throw new GatewayError("INVALID_FIELD", {
        field: kind,
        reason: `a list of at most ${MAX_ENTRIES} entries`,
      });
    if (value.length === 0) continue;
    settings[kind] = value.map((entry, i) =>
      checkedEntry(kind as (typeof KINDS)[number], entry, `${kind}[${i}]`, knownMethods, examples),
    );
  }
  return settings as KeySettings;
}

function checkedEntry(
  kind: (typeof KINDS)[number],
  entry: unknown,
  field: string,
  knownMethods: ReadonlySet<string> | undefined,
  examples: ReadonlySet<string> | undefined,
): unknown {
  const refuse = (reason: string): never => {
    throw new GatewayError("INVALID_FIELD", { field, reason });
  };
  if (kind === "jwtKeys") {
    const key = entry as Partial<JwtKey> | null;
    if (typeof key !== "object" || key === null || typeof key.pem !== "string")
      return refuse("an object with pem (and an optional id)");
    if (key.id !== undefined && (typeof key.id !== "string" || !/^[\w.:-]{1,64}$/.test(key.id)))
      return refuse("id: up to 64 letters, digits, _ . : -");
    try {
      publicKeyOf(key.pem);
    } catch (error) {
      return refuse((error as Error).message);
    }
    return key.id === undefined ? { pem: key.pem.trim() } : { id: key.id, pem: key.pem.trim() };
  }
  if (typeof entry !== "string" || entry.length === 0 || entry.length > 200) return refuse("a string");
  if (kind === "origins") {
    // a local file's and a sandboxed frame's Origin, which any site's page can send: read as a host named
    // "null", it was saved and allowed nothing
    if (entry.trim().toLowerCase() === "null")
      return refuse(
        "a page's origin: null is the Origin of every local file and sandboxed frame, whatever site it comes from",
      );
    // a browser sends a host of other letters than ASCII's as punycode (xn--…): kept as it will come
    let origin = asciiHost(entry.toLowerCase().replace(/\/$/, ""));
    const parts = ORIGIN.exec(origin);
    const [, , wildcard, host = "", port] = parts ?? [];
    const ipv6 = host.startsWith("[") ? host.slice(1, -1) : undefined;
    if (
      parts === null ||
      (port !== undefined && !(Number(port) >= 1 && Number(port) <= 65_535)) ||
      (ipv6 !== undefined && (wildcard !== undefined || isIP(ipv6) !== 6))
    )
      return refuse("an origin, such as https://app.example.com or https://*.example.com");
    // an IPv6 address as a browser writes it in its Origin: the shortest form ([0:0:…:1] is [::1])
    if (ipv6 !== undefined) origin = origin.replace(host, new URL(`http://${host}`).hostname);
    // a browser's Origin never names its scheme's own port: kept as it will be compared
    return origin.replace(/^(https:\/\/[^/]*):443$|^(http:\/\/[^/]*):80$/, "$1$2");
  }
  if (kind === "ips") {
    if (addressBlock(entry) === undefined)
      return refuse("an IP address or a CIDR block, such as 203.0.113.0/24");
    return entry;
  }
  if (kind === "methods") {
    if (!METHOD.test(entry)) return refuse("a method (eth_call, debug_*) or a REST route (GET /blocks/{})");
    // a route is matched as the gateway names it: the HTTP method in capitals, the shape without a
    // trailing slash; a different spelling would refuse the very calls it names
    const [verb, path] = entry.split(" ");
    if (path !== undefined && !ROUTE_VERB.test(verb as string))
      return refuse("a REST route's HTTP method in capitals: GET, POST, … (GET /blocks/{})");
    if (path !== undefined && path.length > 1 && path.endsWith("/"))
      return refuse("a REST route without a trailing slash (POST /wallet/getnowblock)");
    // a method or route by name that no network serves is a typo: allowed, it would allow nothing
    if (!entry.includes("*") && knownMethods !== undefined && !knownMethods.has(entry))
      return refuse(
        path === undefined
          ? `a method one of the networks serves (${examplesOf(examples ?? knownMethods, false)})`
          : `a route one of the networks serves, by its shape (${examplesOf(examples ?? knownMethods, true)})`,
      );
    return entry;
  }
  if (!CONTRACT.test(entry))
    return refuse(
      "a contract address: 0x and 40 hex digits (50 to 64 for a field element's), 25 to 64 base58 characters, or 40 to 64 hex digits",
    );
  // a checksum that fails is a typo, which would refuse every call to the contract the owner meant; the
  // reason says what an entry must be, as every other one does (the dashboard puts "not" before it)
  if (!checksumHolds(entry))
    return refuse(
      entry.startsWith("0x")
        ? "an address whose mixed case matches its EIP-55 checksum (or all one case)"
        : "a base58check address whose checksum holds (a version byte, 20 bytes and a 4-byte checksum)",
    );
  return entry.startsWith("0x") ? entry.toLowerCase() : entry;
}

/**
 * Whether an address's own checksum holds, where it has one: a 0x address in mixed case (EIP-55: each
 * letter in capitals where the keccak-256 of the lower-case address has a nibble of 8 or more), a base58
 * address of 25 bytes (base58check: a version byte, 20 bytes and a 4-byte checksum); any other form has none.
 */
function checksumHolds(address: string): boolean {
  if (/^0x[0-9a-fA-F]{40}$/.test(address)) {
    const digits = address.slice(2);
    if (digits === digits.toLowerCase() || digits === digits.toUpperCase()) return true;
    const hash = Buffer.from(keccak_256(digits.toLowerCase())).toString("hex");
    for (let i = 0; i < 40; i++) {
      const digit = digits[i] as string;
      const upper = Number.parseInt(hash[i] as string, 16) >= 8;
      if (/[a-f]/i.test(digit) && (digit === digit.toUpperCase()) !== upper) return false;
    }
    return true;
  }
  if (/^[1-9A-HJ-NP-Za-km-z]{25,64}$/.test(address) && bs58.decodeUnsafe(address)?.length === 25)
    return bs58check.decodeUnsafe(address) !== undefined;
  return true;
}

/** An origin whose host is written in other letters than ASCII's, with that host as punycode. */
function asciiHost(origin: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range
  if (/^[\x00-\x7f]*$/.test(origin)) return origin;
  const parts = /^((?:[a-z-]+:\/\/)?(?:\*\.)?)([^:/]+)(.*)$/.exec(origin);
  const ascii = parts === null ? "" : domainToASCII(parts[2] as string);
  return parts === null || ascii === "" ? origin : `${parts[1]}${ascii}${parts[3]}`;
}

/** How many client addresses, methods or contracts a key's answers are kept for (remembered). */
const ANSWERS = 1024;

/**
 * `answer` with each value's answer kept, started over past ANSWERS values: a key's calls come from a few
 * addresses and name a few methods and contracts, over and over, and only methods of the registry's
 * allow-lists reach the method test (jsonrpc/check.ts).
 */
function remembered<T extends boolean | string>(answer: (value: string) => T): (value: string) => T {
  const answers = new Map<string, T>();
  return (value) => {
    let found = answers.get(value);
    if (found === undefined) {
      found = answer(value);
      if (answers.size >= ANSWERS) answers.clear();
      answers.set(value, found);
    }
    return found;
  };
}

/** A key's settings compiled once per change of its grant, as the pipeline applies them. */
/**
 * What settings allow and refuse, as text two proxies compare: each list's entries in one order (a list
 * matches any of its entries, so their order means nothing), the lists in KINDS' order. Settings saved again
 * as they were, in another order, read the same.
 */
export function settingsIdentity(settings: KeySettings): string {
  return JSON.stringify(
    KINDS.map((kind) => (settings[kind] ?? []).map((entry) => JSON.stringify(entry)).sort()),
  );
}

export class KeyRules {
  readonly #origins:
    | readonly { scheme?: string; wildcard: boolean; host: string; port?: string }[]
    | undefined;
  readonly #ips: ((ip: string) => boolean) | undefined;
  readonly #methods: ((method: string) => boolean) | undefined;
  readonly #contracts: ReadonlySet<string> | undefined;
  readonly jwt: JwtVerifier | undefined;
  /**
   * The contracts list as a short digest (undefined without one): part of whose the key's filters are
   * (pipeline/admitted.ts `stateOwner`), so that one made under another list is not polled under this one.
   * The same list gives the same digest in every process, which share filters through Redis.
   */
  readonly contractsTag: string | undefined;

  private constructor(settings: KeySettings) {
    this.#origins = settings.origins?.map((origin) => {
      const [, scheme, wildcard, host, port] = ORIGIN.exec(origin) ?? [];
      return {
        ...(scheme === undefined ? {} : { scheme }),
        wildcard: wildcard !== undefined,
        host: host ?? "",
        ...(port === undefined ? {} : { port }),
      };
    });
    if (settings.ips !== undefined) {
      // BlockList.check makes a SocketAddress for each check, about 2 µs a request (docs/performance.md)
      this.#ips = remembered(addressMatcher(settings.ips));
    }
    if (settings.methods !== undefined) {
      const literal = (m: string) => !m.includes("*") || starShapes().has(m);
      const exact = new Set(settings.methods.filter(literal));
      const patterns = settings.methods.filter((m) => !literal(m)).map(patternOf);
      this.#methods = remembered((method) => exact.has(method) || patterns.some((p) => p.test(method)));
    }
    if (settings.contracts !== undefined) this.#contracts = new Set(settings.contracts.map(addressKey));
    this.contractsTag =
      this.#contracts === undefined
        ? undefined
        : createHash("sha256")
            .update([...this.#contracts].sort().join(","))
            .digest("base64url")
            .slice(0, 12);
    this.jwt = settings.jwtKeys === undefined ? undefined : new JwtVerifier(settings.jwtKeys);
  }

  /** The rules of `settings`, or undefined when they restrict nothing (most keys: nothing to check). */
  static of(settings: KeySettings | undefined): KeyRules | undefined {
    if (settings === undefined || !KINDS.some((kind) => settings[kind] !== undefined)) return undefined;
    return new KeyRules(settings);
  }

  /** The request's `Origin`, when origins are set: a request without one is refused. */
  allowsOrigin(origin: string | undefined): boolean {
    const origins = this.#origins;
    if (origins === undefined) return true;
    if (origin === undefined) return false;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    const scheme = url.protocol.slice(0, -1);
    // a browser extension's id is a host URL keeps in its case (safari-web-extension://E522F5F2-…)
    const host = url.hostname.toLowerCase();
    // the URL leaves out its scheme's own port; an entry may name it (app.example.com:443)
    const port = url.port || (scheme === "https" ? "443" : scheme === "http" ? "80" : "");
    return origins.some(
      (o) =>
        (o.scheme === undefined || o.scheme === scheme) &&
        (o.port === undefined || o.port === port) &&
        (o.wildcard ? host.endsWith(`.${o.host}`) : host === o.host),
    );
  }

  allowsIp(ip: string): boolean {
    return this.#ips === undefined || this.#ips(ip);
  }

  /** Whether origins are set: only then is a request's Origin read. */
  get limitsOrigins(): boolean {
    return this.#origins !== undefined;
  }

  allowsMethod(method: string): boolean {
    return this.#methods === undefined || this.#methods(method);
  }

  /** Whether a contract list is set: then calls that name a contract are checked. */
  get limitsContracts(): boolean {
    return this.#contracts !== undefined;
  }

  /** Every address the call names is listed; a call that names none (eth_getLogs over every contract) is not. */
  allowsContracts(addresses: readonly string[]): boolean {
    const contracts = this.#contracts;
    if (contracts === undefined) return true;
    if (addresses.length === 0) return false;
    return addresses.every((a) => contracts.has(this.#addressKey(a)));
  }

  readonly #addressKey = remembered(addressKey);
}

/**
 * An address as every form of it compares: a 20-byte account written as 0x hex, as hex behind a version
 * byte, or in base58check behind one (an SDK may send in hex the contract its user listed in base58) is
 * those 20 bytes in lower-case hex; any 0x hex as its number (an address that is a field element is sent
 * padded to 64 digits by one SDK and shown without its leading zeros by another), so leading zeros never
 * count; any other address as it is written, 0x in lower case.
 */
export function addressKey(address: string): string {
  if (/^0x[0-9a-fA-F]{40}$/.test(address) || /^[0-9a-fA-F]{42}$/.test(address))
    return asNumber(address.slice(-40));
  if (/^0x[0-9a-fA-F]{1,64}$/.test(address)) return asNumber(address.slice(2));
  if (/^[1-9A-HJ-NP-Za-km-z]{25,64}$/.test(address)) {
    let payload: Uint8Array | undefined;
    try {
      payload = bs58check.decode(address);
    } catch {
      // not base58check (its checksum fails): compared as written
    }
    if (payload?.length === 21) return asNumber(Buffer.from(payload.subarray(1)).toString("hex"));
  }
  return address.startsWith("0x") ? address.toLowerCase() : address;
}

/** Hex digits as the number they write: lower case, without leading zeros. */
function asNumber(hex: string): string {
  return hex.toLowerCase().replace(/^0+(?=.)/, "");
}

/**
 * Two of the methods (or routes) the key's networks serve, for a refusal to show: examples of networks the
 * deployment does not serve would be refused themselves, and those of networks the key does not reach would
 * be taken and allow the key nothing.
 */
function examplesOf(known: ReadonlySet<string>, routes: boolean): string {
  const examples = [...known].filter((entry) => entry.includes(" ") === routes).slice(0, 2);
  return examples.length === 0
    ? `none: no network of this key serves ${routes ? "REST" : "JSON-RPC"}`
    : `${examples.join(", ")}, …`;
}
