import { parseArgs } from "node:util";
import { endpointsByLabel, networkCodes } from "../../generated/endpoints.js";
import { ConfigError, loadConfig } from "../config/load.js";
import { GatewayError } from "../errors/table.js";
import type { Plan } from "../keys/types.js";
import { openAccountStore } from "./accounts/open-store.js";
import { AccountService, type KeyView } from "./accounts/service.js";
import type { Account, AccountStore } from "./accounts/types.js";
import { gatewayOrigin } from "./endpoint-urls.js";
import { UPSTREAMS_USAGE, upstreamsCommand } from "./upstreams-cli.js";

const USAGE = `usage: npm run admin -- <command>

  accounts create --email <address>         an active account, no confirmation e-mail
  accounts list
  accounts suspend --account <id>           its keys stop working (within a second on running gateways)
  accounts activate --account <id>
  accounts close --account <id>             final
  keys issue --account <id> [--network <code>]... [--plan shared|dedicated|free-test] [--no-archive] [--days <n>]
             [--rate <per second>[/<burst>]]   the key's own rate limit (the gateway's defaultRate without it)
                                            prints the new key once; it is never shown again
  keys list --account <id>                  prefixes only
  keys usage --key <id> [--from YYYY-MM-DD] [--to YYYY-MM-DD]
                                            calls per day and network, errors apart (last 30 days)
  keys revoke --key <id>
  keys rotate --key <id>                    prints the new key once; the old one works for the grace period
${UPSTREAMS_USAGE}

The account store and the operator API are the ones the deployment config names (GATEWAY_CONFIG, or
deploy/local.yaml).`;

async function main(argv: readonly string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      email: { type: "string" },
      account: { type: "string" },
      key: { type: "string" },
      network: { type: "string", multiple: true },
      plan: { type: "string" },
      days: { type: "string" },
      rate: { type: "string" },
      "no-archive": { type: "boolean" },
      label: { type: "string" },
      from: { type: "string" },
      to: { type: "string" },
      upstream: { type: "string" },
      proxy: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [noun, verb] = positionals;
  if (values.help || noun === undefined) {
    console.log(USAGE);
    return noun === undefined && !values.help ? 2 : 0;
  }
  const config = loadConfig(endpointsByLabel);
  if (noun === "upstreams") return upstreamsCommand(verb, values, config);
  if (config.accounts === undefined) throw new ConfigError("the deployment config has no accounts section");
  const store = await openAccountStore(config.accounts.database);
  const service = new AccountService({
    store,
    // The operator's key is printed, not mailed; e-mails from other commands go to the configured place.
    mailer: { send: async () => {} },
    config: config.accounts,
    networks: new Set(networkCodes),
    origin: gatewayOrigin(config),
    endpoints: endpointsByLabel,
    onChange: () => {},
  });
  try {
    return await run(`${noun} ${verb ?? ""}`.trim(), values, service, store);
  } finally {
    await store.close();
  }
}

type Values = {
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

async function run(
  command: string,
  values: Values,
  service: AccountService,
  store: AccountStore,
): Promise<number> {
  const accountId = () => numberOf(values.account, "--account");
  switch (command) {
    case "accounts create":
      printAccount(await service.createAccount(values.email));
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
      printAccount(await service.setStatus(accountId(), status[command]));
      return 0;
    }
    case "keys issue": {
      const plan = (values.plan ?? "shared") as Plan;
      if (!["shared", "dedicated", "free-test"].includes(plan))
        throw new GatewayError("INVALID_FIELD", { field: "plan" });
      const days = values.days === undefined ? undefined : numberOf(values.days, "--days");
      const { key, view } = await service.issueKey(accountId(), {
        networks: values.network ?? "*",
        plan,
        archive: values["no-archive"] !== true,
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
      const report = await service.keyUsage(account, key.id, values.from, values.to);
      console.log(`key ${key.id}  ${key.prefix}…  ${report.from} to ${report.to}`);
      for (const row of report.days)
        console.log(`${row.day}  ${row.label}  calls ${row.calls}  errors ${row.errors}`);
      console.log(`total  calls ${report.total.calls}  errors ${report.total.errors}`);
      return 0;
    }
    case "keys list": {
      const account = await store.account(accountId());
      if (account === undefined) throw new GatewayError("INVALID_FIELD", { field: "account" });
      for (const view of await service.listKeys(account)) printKey(view);
      return 0;
    }
    case "keys revoke":
      printKey(await service.revokeKey(numberOf(values.key, "--key")));
      return 0;
    case "keys rotate": {
      const { key, view } = await service.rotateKey(numberOf(values.key, "--key"));
      printKey(view);
      console.log(
        `\n${key}\n\nThis is the only time the key is shown. The old key works until its grace period ends.`,
      );
      return 0;
    }
    default:
      console.error(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

function numberOf(value: string | undefined, flag: string): number {
  const n = Number(value);
  if (value === undefined || !Number.isInteger(n) || n < 0)
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

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof GatewayError) {
    console.error(
      `error: ${error.code}: ${error.message}${error.detail ? ` ${JSON.stringify(error.detail)}` : ""}`,
    );
    process.exitCode = 1;
  } else if (error instanceof ConfigError) {
    console.error(`invalid configuration:\n${error.message}`);
    process.exitCode = 2;
  } else throw error;
}
