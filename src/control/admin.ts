import { parseArgs } from "node:util";
import { endpointsByLabel, networkCodes } from "../../generated/endpoints.js";
import { ConfigError, loadConfig } from "../config/load.js";
import { versionLine } from "../embedded.js";
import { GatewayError } from "../errors/table.js";
import { isPostgresUrl } from "../store/database-url.js";
import { openAccountStore } from "./accounts/open-store.js";
import { AccountService } from "./accounts/service.js";
import type { AccountStore } from "./accounts/types.js";
import { accountsCommand } from "./admin-commands.js";
import { ADMIN_EXIT, failureOf, UsageError } from "./admin-failure.js";
import { gatewayOrigin } from "./endpoint-urls.js";
import { UPSTREAMS_USAGE, upstreamsCommand } from "./upstreams-cli.js";

// The operator CLI, wherever the gateway is deployed: `node-gateway admin …` in the single executable
// (src/single-executable.ts), `node dist/admin.js …` in a deployment of dist/ (control/cli.ts), and
// `npm run admin -- …` in the source tree, which builds dist/ and runs the same.

const ADMIN_USAGE = `usage: node-gateway admin <command> [flags]   the single executable, or node dist/gateway.js admin
       node dist/admin.js <command> [flags]   a deployment of dist/ (node-gateway-admin once installed)
       npm run admin -- <command> [flags]     the source tree: builds dist/, then runs dist/admin.js

  accounts create --email <address>         an active account, no confirmation e-mail
  accounts list
  accounts suspend --account <id>           its keys stop working (within a second on running gateways)
  accounts activate --account <id>
  accounts close --account <id>             final
  keys issue --account <id> [--network <code>]... [--plan <name>] [--no-archive] [--days <n>]
             [--rate <per second>[/<burst>]]   the key's own rate limit (the gateway's defaultRate without it)
                                            a plan of the deployment config: shared (the default), dedicated,
                                            free-test, or one it adds; prints the new key once. Archive
                                            access unless --no-archive (a free test: none)
  keys list --account <id>                  prefixes only
  keys usage --key <id> [--from YYYY-MM-DD] [--to YYYY-MM-DD]
                                            calls per day and network, errors apart (last 30 days)
  keys revoke --key <id>
  keys rotate --key <id>                    prints the new key once; the old one works for the grace period
${UPSTREAMS_USAGE}
  --config <file>                           the deployment config (as GATEWAY_CONFIG names it)
  --version                                 the gateway's version and the registry's stamp
  --help                                    this text

The account store and the operator API are the ones the deployment config names (--config, GATEWAY_CONFIG, or the
embedded default deploy/local.yaml, whose store is .data/gateway.sqlite under the working directory), with
the gateway's environment variables (GATEWAY_ACCOUNTS_DB, GATEWAY_OPERATOR_PORT, …).

A failure is one line on stderr, "error <CODE>: <message>" (codes: docs/errors.md), and the exit status:
  0  done
  1  the command failed: STORE_UNAVAILABLE (the account store cannot be reached; try again), or refused
     (INVALID_FIELD, INVALID_EMAIL, KEY_NOT_FOUND, …), or INTERNAL (a bug)
  2  nothing was run: USAGE (an unknown command or flag, a flag without its value) or INVALID_CONFIG`;

/** Runs the command line `argv` (the words after the program); its exit status. Never throws. */
export async function runAdmin(argv: readonly string[]): Promise<number> {
  try {
    return await run(argv);
  } catch (error) {
    const { line, status } = failureOf(error);
    process.stderr.write(`${line}\n`);
    return status;
  }
}

async function run(argv: readonly string[]): Promise<number> {
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
      config: { type: "string" },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean" },
    },
  });
  if (values.config !== undefined) process.env.GATEWAY_CONFIG = values.config;
  if (values.help) {
    process.stdout.write(`${ADMIN_USAGE}\n`);
    return ADMIN_EXIT.OK;
  }
  if (values.version) {
    process.stdout.write(`${versionLine("node-gateway admin")}\n`);
    return ADMIN_EXIT.OK;
  }
  const [noun, verb] = positionals;
  if (noun === undefined) throw new UsageError("no command given");
  if (noun !== "accounts" && noun !== "keys" && noun !== "upstreams")
    throw new UsageError(`unknown command "${positionals.join(" ")}"`);
  const config = loadConfig(endpointsByLabel, process.env, ["sharedLimits", "tracing"]);
  if (noun === "upstreams") return upstreamsCommand(verb, values, config);
  if (config.accounts === undefined) throw new ConfigError("the deployment config has no accounts section");
  const store = await openStore(config.accounts.database);
  const service = new AccountService({
    store,
    // The operator's key is printed, not mailed; e-mails from other commands go to the configured place.
    mailer: { send: async () => {} },
    config: config.accounts,
    plans: config.plans,
    networks: new Set(networkCodes),
    origin: gatewayOrigin(config),
    endpoints: endpointsByLabel,
    onChange: () => {},
  });
  try {
    return await accountsCommand(`${noun} ${verb ?? ""}`.trim(), values, service, store);
  } finally {
    await store.close();
  }
}

/** The account store; one that cannot be opened (PostgreSQL down, an unreadable file) is STORE_UNAVAILABLE. */
async function openStore(database: string): Promise<AccountStore> {
  try {
    return await openAccountStore(database);
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    const reason = (error as Error).message;
    // PostgreSQL's message names the store already, without its password.
    throw new GatewayError("STORE_UNAVAILABLE", {
      reason: isPostgresUrl(database) ? reason : `the account store ${database} cannot be opened: ${reason}`,
    });
  }
}
