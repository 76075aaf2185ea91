import { GatewayError } from "../errors/table.js";
import type { Plan } from "../keys/types.js";
import type { KeyView } from "./accounts/key-view.js";
import type { AccountService } from "./accounts/service.js";
import type { Account, AccountStore } from "./accounts/types.js";
import { UsageError } from "./admin-failure.js";

// The operator CLI's account and key commands (admin.ts reads the command line and opens the store).

export type Values = {
  from?: string;
  to?: string;
  email?: string;
  account?: string;
  key?: string;
  network?: string[];
  plan?: string;
  days?: string;
  rate?: string;
  "no-archive"?: boolean;
};

/** Runs `accounts …` or `keys …` against the store; a refusal is thrown as the GatewayError it is. */
export async function accountsCommand(
  command: string,
  values: Values,
  service: AccountService,
  store: AccountStore,
): Promise<number> {
  const accountId = () => numberOf(values.account, "--account");
  switch (command) {
    case "accounts create":
      printAccount(await service.admin.createAccount(values.email));
      return 0;
    case "accounts list":
      for (const account of await store.listAccounts()) printAccount(account);
      return 0;
    case "accounts suspend":
    case "accounts activate":
    case "accounts close": {
      const status = {
        "accounts suspend": "suspended",
        "accounts activate": "active",
        "accounts close": "closed",
      } as const;
      printAccount(await service.admin.setStatus(accountId(), status[command]));
      return 0;
    }
    case "keys issue": {
      // any plan of the deployment config, its own included: the service checks the name
      const plan: Plan = values.plan ?? "shared";
      const days = values.days === undefined ? undefined : numberOf(values.days, "--days", 1);
      const { key, view } = await service.keys.issue(accountId(), {
        networks: values.network ?? "*",
        plan,
        // without the flag, the plan's way: a free test has none (keys.ts)
        ...(values["no-archive"] === true ? { archive: false } : {}),
        ...(days === undefined ? {} : { expiresAt: Date.now() + days * 86_400_000 }),
        ...(values.rate === undefined ? {} : { rate: rateOf(values.rate) }),
      });
      printKey(view);
      console.log(`\n${key}\n\nThis is the only time the key is shown.`);
      return 0;
    }
    case "keys usage": {
      const key = await store.key(numberOf(values.key, "--key"));
      const account = key && (await store.account(key.accountId));
      if (key === undefined || account === undefined) throw new GatewayError("KEY_NOT_FOUND");
      const report = await service.usage.ofKey(account, key.id, values.from, values.to);
      console.log(`key ${key.id}  ${key.prefix}…  ${report.from} to ${report.to}`);
      // compute units beside calls, as the dashboard and the API give them: what the quotas count
      for (const row of report.days)
        console.log(`${row.day}  ${row.label}  calls ${row.calls}  CU ${row.units}  errors ${row.errors}`);
      console.log(
        `total  calls ${report.total.calls}  CU ${report.total.units}  errors ${report.total.errors}`,
      );
      return 0;
    }
    case "keys list": {
      const account = await store.account(accountId());
      if (account === undefined)
        throw new GatewayError("INVALID_FIELD", { field: "account", reason: "no account has this id" });
      for (const view of await service.keys.list(account)) printKey(view);
      return 0;
    }
    case "keys revoke":
      printKey(await service.keys.revokeAny(numberOf(values.key, "--key")));
      return 0;
    case "keys rotate": {
      const { key, view } = await service.keys.rotateAny(numberOf(values.key, "--key"));
      printKey(view);
      console.log(
        `\n${key}\n\nThis is the only time the key is shown. The old key works until its grace period ends.`,
      );
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/** `value` as a whole number of at least `least` (a key's `--days` 1: one of 0 would be issued expired). */
function numberOf(value: string | undefined, flag: string, least = 0): number {
  const n = Number(value);
  if (value === undefined || !Number.isInteger(n) || n < least)
    throw new GatewayError("INVALID_FIELD", { field: flag });
  return n;
}

function printAccount(account: Account): void {
  console.log(
    `account ${account.id}  ${account.email}  ${account.status}  free tests used: ${account.freeTestsUsed}`,
  );
}

function printKey(view: KeyView): void {
  const networks = view.networks === "*" ? "*" : view.networks.join(",");
  const expires = view.expiresAt === undefined ? "" : `  expires ${view.expiresAt}`;
  const rate = view.rate === undefined ? "" : `  rate ${view.rate.perSecond}/s burst ${view.rate.burst}`;
  console.log(
    `key ${view.id}  ${view.prefix}…  ${view.plan}  ${networks}  archive:${view.archive}  ${view.status}${expires}${rate}`,
  );
}

/** `--rate 100` or `--rate 100/200`: per second, and a burst (twice the rate unless given). */
function rateOf(text: string): { perSecond: number; burst: number } {
  const [perSecond, burst] = text.split("/").map(Number);
  if (perSecond === undefined || !(perSecond > 0) || (burst !== undefined && !(burst >= 1)))
    throw new GatewayError("INVALID_FIELD", {
      field: "--rate",
      reason: "<per second>[/<burst>], both positive",
    });
  return { perSecond, burst: burst ?? Math.max(1, perSecond * 2) };
}
