import type { RateSpec } from "../../config/types.js";
import { GatewayError } from "../../errors/table.js";
import { keyHash } from "../../keys/digest.js";
import { newApiKey } from "../../keys/issue.js";
import { checkedSettings, type KeySettings } from "../../keys/key-settings.js";
import type { Plan } from "../../keys/types.js";
import { reachesArchive } from "../../plans/plan-terms.js";
import { routeShapes } from "../../registry/match-route.js";
import type { Endpoint } from "../../registry/types.js";
import { type GatewayOrigin, keyEndpoints } from "../endpoint-urls.js";
import type { ServiceContext } from "./context.js";
import { type KeyOccasion, keyEmail } from "./emails.js";
import { networkOf, ownKey } from "./input.js";
import { type KeyView, keyStatus, keyView } from "./key-view.js";
import type { RequestLimits } from "./request-limits.js";
import { type Account, type IssueTerms, type KeyRecord, type NewKey, PrefixTaken } from "./types.js";

export interface IssueOptions {
  readonly networks: readonly string[] | "*";
  readonly plan: Plan;
  readonly archive?: boolean;
  readonly expiresAt?: number;
  /** The key's own rate; the proxies' `defaultRate` without one. */
  readonly rate?: RateSpec;
  /** A rotation's: the replaced key's settings and the prefix whose quota it spends. */
  readonly settings?: KeySettings;
  readonly quotaPrefix?: string;
}

const PREFIX_LENGTH = 10;
/**
 * New keys drawn when the last one's prefix was taken: the prefix names a key's quota and usage, so two
 * keys never share one. With 8 random base62 characters a clash is rare (about 0.2 % by a million keys),
 * five in a row never.
 */
const PREFIX_DRAWS = 5;

/**
 * API keys. A customer's key is issued on an order or a free test and sent by e-mail, never shown in an
 * answer; rotation keeps the old key working for a grace period. The operator's `issue`, `rotateAny` and
 * `revokeAny` act on any account's keys and return a new key for the caller to show once.
 */
export class Keys {
  readonly #context: ServiceContext;
  readonly #limits: RequestLimits;
  readonly #networks: ReadonlySet<string>;
  readonly #origin: GatewayOrigin;
  readonly #endpoints: ReadonlyMap<string, Endpoint>;
  /** Every JSON-RPC method some network serves: a key's method list naming another is refused. */
  readonly #knownMethods: ReadonlySet<string>;
  /** Each network's methods and routes: a refusal's examples are those of the key's networks. */
  readonly #methodsOf = new Map<string, Set<string>>();
  /** The networks some call of which names a contract the gateway reads (registry `contracts`). */
  readonly #namingContracts = new Set<string>();

  constructor(
    context: ServiceContext,
    limits: RequestLimits,
    /** The registry's networks, where callers reach the gateway and its labels: the URLs a key e-mail lists. */
    registry: {
      networks: ReadonlySet<string>;
      origin: GatewayOrigin;
      endpoints: ReadonlyMap<string, Endpoint>;
    },
  ) {
    this.#context = context;
    this.#limits = limits;
    this.#networks = registry.networks;
    this.#origin = registry.origin;
    this.#endpoints = registry.endpoints;
    // what a key's method list may name: the networks' JSON-RPC methods, and their REST routes by shape
    for (const endpoint of registry.endpoints.values()) {
      const methods = this.#methodsOf.get(endpoint.code) ?? new Set<string>();
      this.#methodsOf.set(endpoint.code, methods);
      for (const mount of endpoint.mounts)
        for (const method of [
          ...(mount.policy.jsonrpc?.methods.keys() ?? []),
          ...(mount.policy.routes === undefined ? [] : routeShapes(mount.policy.routes)),
        ])
          methods.add(method);
      if (endpoint.mounts.some((mount) => Object.keys(mount.policy.contracts ?? {}).length > 0))
        this.#namingContracts.add(endpoint.code);
    }
    this.#knownMethods = new Set([...this.#methodsOf.values()].flatMap((methods) => [...methods]));
  }

  /** A free test: one per network, at most `maxPerEmail` per account, ending after `days`. */
  async requestFreeTest(account: Account, networkInput: unknown, ip: string): Promise<KeyView> {
    const { config } = this.#context;
    const network = networkOf(networkInput, this.#networks);
    this.#limits.takeForAddress("free-test-ip", ip, config.signupRatePerIp);
    const now = this.#context.now();
    const expiresAt = now + config.freeTest.days * 86_400_000;
    // judged in the insert's transaction: of a burst of requests for one network, one gets the key
    const check = (held: Account, keys: readonly KeyRecord[]) => {
      const reason =
        held.freeTestsUsed >= config.freeTest.maxPerEmail
          ? `an account has ${config.freeTest.maxPerEmail} free tests, one per network, and this one has had them all`
          : keys.some((k) => k.plan === "free-test" && k.networks !== "*" && k.networks.includes(network))
            ? `an account has one free test per network, and this one has had ${network}'s`
            : undefined;
      if (reason !== undefined)
        throw new GatewayError("FREE_TEST_LIMIT", { maxPerEmail: config.freeTest.maxPerEmail, reason });
      // the free-test plan's keys an account may hold at once, as an order's plan's (`maxKeys`)
      const maxKeys = this.#context.plans["free-test"]?.maxKeys;
      const active = keys.filter((k) => k.plan === "free-test" && keyStatus(k, now) === "active");
      if (maxKeys !== undefined && active.length >= maxKeys)
        throw new GatewayError("KEY_LIMIT", { plan: "free-test", maxKeys });
    };
    const { record, key } = await this.#issue(
      account.id,
      { networks: [network], plan: "free-test", archive: false, expiresAt },
      config.freeTest.rate,
      { check, freeTest: true },
    );
    await this.#mailKey(account, key, record, { kind: "free-test", network });
    return this.#view(record);
  }

  /** Ordering a node issues a key for that network on the chosen plan. */
  async order(account: Account, networkInput: unknown, planInput: unknown): Promise<KeyView> {
    const network = networkOf(networkInput, this.#networks);
    const { plans } = this.#context;
    const orderable = Object.keys(plans).filter((name) => plans[name]?.orderable === true);
    const plan = planInput ?? "shared";
    if (typeof plan !== "string" || !orderable.includes(plan))
      throw new GatewayError("INVALID_FIELD", { field: "plan", allowed: orderable });
    const maxKeys = plans[plan]?.maxKeys ?? 1;
    // judged in the insert's transaction: of a burst of orders, as many as the plan has room for get a key
    const check = (_: Account, keys: readonly KeyRecord[]) => {
      const now = this.#context.now();
      const held = keys.filter((k) => k.plan === plan && keyStatus(k, now) === "active");
      if (held.length >= maxKeys) throw new GatewayError("KEY_LIMIT", { plan, maxKeys });
    };
    // archive nodes as the plan includes them (a plan without them issues a key without them)
    const archive = plans[plan]?.archive !== false;
    const { record, key } = await this.#issue(account.id, { networks: [network], plan, archive }, undefined, {
      check,
    });
    await this.#mailKey(account, key, record, { kind: "order", plan, network });
    return this.#view(record);
  }

  async list(account: Account): Promise<KeyView[]> {
    return (await this.#context.store.keys(account.id)).map((k) => this.#view(k));
  }

  /** A new key with the same scopes, e-mailed; the old one keeps working for the grace period. */
  async rotate(account: Account, keyId: unknown): Promise<KeyView> {
    const { record, key, old, graceEnds } = await this.#replace(account, keyId);
    await this.#mailKey(account, key, record, { kind: "rotation", oldPrefix: old.prefix, graceEnds });
    return this.#view(record);
  }

  async revoke(account: Account, keyId: unknown): Promise<KeyView> {
    const { store } = this.#context;
    const key = await ownKey(store, account, keyId);
    if (key.status !== "revoked") {
      await store.revokeKey(key.id, this.#context.now());
      await this.#context.onChange();
    }
    return this.#view((await store.key(key.id)) as KeyRecord);
  }

  /**
   * Replaces an active key's settings with what its owner sent (keys/key-settings.ts checks them;
   * INVALID_FIELD names the entry). Every proxy applies them from its next call, as it does a revocation.
   */
  async updateSettings(account: Account, keyId: unknown, input: unknown): Promise<KeyView> {
    const { store } = this.#context;
    const key = await ownKey(store, account, keyId);
    if (keyStatus(key, this.#context.now()) !== "active") throw new GatewayError("KEY_NOT_FOUND");
    // a method none of the key's networks serves allows this key nothing: refused as a typo is
    const served =
      key.networks === "*"
        ? this.#knownMethods
        : new Set(key.networks.flatMap((network) => [...(this.#methodsOf.get(network) ?? [])]));
    const settings = checkedSettings(input, served);
    // a contracts list holds only where the registry reads a call's contract: on a key of networks where
    // none does, it would be shown as saved and restrict nothing
    if (
      settings.contracts !== undefined &&
      key.networks !== "*" &&
      !key.networks.some((network) => this.#namingContracts.has(network))
    )
      throw new GatewayError("INVALID_FIELD", {
        field: "contracts",
        reason: `empty for this key: no call of ${key.networks.join(", ")} names a contract the gateway reads, so a list would restrict nothing`,
      });
    await store.setKeySettings(key.id, settings);
    await this.#context.onChange();
    return this.#view((await store.key(key.id)) as KeyRecord);
  }

  /** Operator: issues a key and returns it; the caller shows it once. */
  async issue(accountId: number, options: IssueOptions): Promise<{ key: string; view: KeyView }> {
    const account = await this.#context.store.account(accountId);
    if (account === undefined)
      throw new GatewayError("INVALID_FIELD", { field: "account", reason: "no account has this id" });
    // a key of a suspended or closed account would be shown as issued and answer UNAUTHORIZED
    if (account.status !== "active")
      throw new GatewayError("ACCOUNT_NOT_ACTIVE", { accountStatus: account.status });
    if (options.networks !== "*") for (const n of options.networks) networkOf(n, this.#networks);
    // any plan the deployment has, orderable or not: the operator may issue what customers cannot order
    const { plans } = this.#context;
    if (plans[options.plan] === undefined)
      throw new GatewayError("INVALID_FIELD", { field: "plan", allowed: Object.keys(plans) });
    const { record, key } = await this.#issue(
      accountId,
      {
        ...options,
        // a network named twice is one network
        networks: options.networks === "*" ? "*" : [...new Set(options.networks)],
        // a free test has no archive, whoever issues it (its own API says so too)
        archive: options.archive ?? options.plan !== "free-test",
      },
      options.rate,
    );
    return { key, view: this.#view(record) };
  }

  /** Operator: rotates any account's key and returns the new one for the caller to show once. */
  async rotateAny(keyId: number): Promise<{ key: string; view: KeyView }> {
    const { record, key } = await this.#replace(await this.#owner(keyId), keyId);
    return { key, view: this.#view(record) };
  }

  /** Operator: revokes any account's key. */
  async revokeAny(keyId: number): Promise<KeyView> {
    return await this.revoke(await this.#owner(keyId), keyId);
  }

  /** The account a key belongs to, for the operator, who names keys by id alone. */
  async #owner(keyId: number): Promise<Account> {
    const record = await this.#context.store.key(keyId);
    const account = record && (await this.#context.store.account(record.accountId));
    if (account === undefined) throw new GatewayError("KEY_NOT_FOUND");
    return account;
  }

  /** Issues a successor with the old key's scopes, and limits the old key to the grace period. */
  async #replace(
    account: Account,
    keyId: unknown,
  ): Promise<{ record: KeyRecord; key: string; old: KeyRecord; graceEnds: number }> {
    const { store, config } = this.#context;
    const old = await ownKey(store, account, keyId);
    // what the store keeps: the grace period, or the key's own expiry if that comes first
    const graceEnds = Math.min(
      this.#context.now() + config.rotationGraceSeconds * 1000,
      old.expiresAt ?? Number.POSITIVE_INFINITY,
    );
    // judged in the insert's transaction, which retires the old key: of concurrent rotations, one succeeds
    const check = (_: Account, keys: readonly KeyRecord[]) => {
      const current = keys.find((k) => k.id === old.id);
      if (current === undefined || keyStatus(current, this.#context.now()) !== "active")
        throw new GatewayError("KEY_NOT_FOUND", { reason: "the key is no longer active" });
      // a key in its grace period has a successor: a second rotation would give a key that expires with
      // this one's grace period, and lose the link to the first successor. Not when that successor was
      // revoked (leaked as it was sent, say): its owner could then rotate neither, and would have no key
      // with this one's scopes, settings and quota after the grace period
      const successor = keys.find((k) => k.id === current.replacedBy);
      if (
        current.replacedBy !== undefined &&
        (successor === undefined || keyStatus(successor, this.#context.now()) === "active")
      )
        throw new GatewayError("KEY_ALREADY_ROTATED", { replacedBy: current.replacedBy });
    };
    const expiresAt = await this.#lineExpiry(old);
    const { record, key } = await this.#issue(
      account.id,
      {
        networks: old.networks,
        plan: old.plan,
        archive: old.archive,
        ...(expiresAt === undefined ? {} : { expiresAt }),
        // the same key to its owner: its locks hold, and it goes on spending the same quota
        settings: old.settings,
        quotaPrefix: old.quotaPrefix,
      },
      old.rate,
      { check, replaces: { id: old.id, expiresAt: graceEnds } },
    );
    return { record, key, old, graceEnds };
  }

  /**
   * The expiry of a key's scopes (a free test's end, or none) for its successor. A key rotated already (its
   * successor revoked, so rotated again) has its grace period's end as its expiry: the newest key of its line
   * holds the scopes' own, as every successor took it.
   */
  async #lineExpiry(key: KeyRecord): Promise<number | undefined> {
    let newest = key;
    while (newest.replacedBy !== undefined) {
      const next = await this.#context.store.key(newest.replacedBy);
      // a successor is always issued after the key it replaces: an id that does not grow ends the walk
      if (next === undefined || next.id <= newest.id || next.accountId !== key.accountId) break;
      newest = next;
    }
    return newest.expiresAt;
  }

  /** Stores a new key's hash and prefix; the key itself goes only to the caller (an answer or an e-mail). */
  async #issue(
    accountId: number,
    options: IssueOptions,
    rate?: KeyRecord["rate"],
    terms?: IssueTerms,
  ): Promise<{ record: KeyRecord; key: string }> {
    for (let draw = 1; ; draw++) {
      const key = newApiKey();
      const spec: NewKey = {
        accountId,
        keyHash: keyHash(key),
        prefix: key.slice(0, PREFIX_LENGTH),
        plan: options.plan,
        networks: options.networks,
        archive: options.archive ?? true,
        ...(rate === undefined ? {} : { rate }),
        ...(options.expiresAt === undefined ? {} : { expiresAt: options.expiresAt }),
        ...(options.settings === undefined ? {} : { settings: options.settings }),
        ...(options.quotaPrefix === undefined ? {} : { quotaPrefix: options.quotaPrefix }),
      };
      try {
        const record = await this.#context.store.insertKey(spec, this.#context.now(), terms);
        await this.#context.onChange();
        return { record, key };
      } catch (error) {
        if (!(error instanceof PrefixTaken) || draw === PREFIX_DRAWS) throw error;
      }
    }
  }

  async #mailKey(account: Account, key: string, record: KeyRecord, occasion: KeyOccasion): Promise<void> {
    // the labels the proxy serves the key: archive ones as its plan says (docs/plans.md `archive`), as the
    // keys page shows them (key-view.ts), not as the key alone was granted
    const plan = this.#context.plans[record.plan];
    const archive = plan === undefined ? record.archive : reachesArchive(plan.archive, record.archive);
    const endpoints = keyEndpoints(this.#origin, this.#endpoints, { ...record, archive }, key);
    await this.#context.mail(account.email, keyEmail(occasion, key, record, endpoints));
  }

  #view(key: KeyRecord): KeyView {
    return keyView(key, this.#context.now(), this.#context.plans);
  }
}
