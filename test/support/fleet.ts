import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import { networkCodes } from "../../generated/endpoints.js";
import { DEFAULT_ACCOUNTS, DEFAULT_CONFIG } from "../../src/config/defaults.js";
import type { GatewayConfig } from "../../src/config/types.js";
import type { Mailer } from "../../src/control/accounts/mailer.js";
import { type ControlPlane, createControlPlane } from "../../src/control/plane.js";
import { createLogger } from "../../src/log.js";
import { ROOT } from "../registry/helpers.js";
import { bundleOf } from "./bundles.js";

/** One proxy process of a fleet: its ports, its log lines, and calls to it. */
export interface FleetProxy {
  readonly port: number;
  readonly operatorPort: number;
  readonly child: ChildProcess;
  readonly logs: string[];
  /** eth_blockNumber with `key` on `eth.<domain>`; the HTTP status. */
  call(key: string): Promise<number>;
  /**
   * Whether it knows `key`, without spending its rate: a GET, which JSON-RPC does not take, is refused when
   * the mount is picked (stage 3: 405), after the key is admitted (stage 2: 401 for a key it does not know)
   * and before the rate is charged (stage 5). A refused call (a method eth does not serve) would cost a token.
   */
  knows(key: string): Promise<boolean>;
  /** eth_blockNumber with no key on the public host `bsc-public.<domain>`; the HTTP status. */
  callPublic(): Promise<number>;
  /** The value of gateway_dependency_up for `dependency` on its /metrics. */
  dependencyUp(dependency: "account_store" | "shared_limits"): Promise<number | undefined>;
  /** gateway_rate_limit_leases_total on its /metrics, by outcome. */
  leaseOutcomes(): Promise<Record<string, number>>;
}

export const FLEET_DOMAIN = "gw.test";
const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

/**
 * Writes a deployment config for proxies sharing one account store and, given one, one Redis (without it,
 * each limits alone), and returns its path.
 */
export function writeFleetConfig(
  dir: string,
  options: { database: string; redis?: string; upstream: string; extra?: readonly string[] },
): string {
  const file = join(dir, "fleet.yaml");
  writeFileSync(
    file,
    [
      `domain: ${FLEET_DOMAIN}`,
      "listen: { host: 127.0.0.1, port: 0 }",
      "operator: { listen: { host: 127.0.0.1, port: 0 } }",
      `upstreams: { eth: ["${options.upstream}"], bsc: ["${options.upstream}"] }`,
      `publicHosts: { "bsc-public.${FLEET_DOMAIN}": bsc }`,
      "limits: { publicRate: { perSecond: 2, burst: 10 } }",
      "health: { probeIntervalMs: 0 }",
      "log: { level: info, access: false }",
      "accounts:",
      `  database: "${options.database}"`,
      "  listen: { host: 127.0.0.1, port: 0 }",
      `  mail: { from: "gw@example.com", outbox: "${join(dir, "outbox")}" }`,
      "  usageFlushIntervalMs: 500",
      ...(options.redis === undefined
        ? []
        : [`sharedLimits: { redis: "${options.redis}", leaseMs: 100, fallbackShare: 1 }`]),
      ...(options.extra ?? []),
    ].join("\n"),
  );
  return file;
}

/** Starts one proxy process (`src/proxy/main.ts`) on `config`; resolves once it listens. */
export async function startFleetProxy(config: string): Promise<FleetProxy> {
  const child = spawn(process.execPath, [await bundleOf("src/proxy/main.ts")], {
    cwd: ROOT,
    env: { ...process.env, GATEWAY_CONFIG: config },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const logs: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "gateway listening" line: ${logs.join("")}`)),
      30_000,
    );
    let pending = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        logs.push(line);
        if (!line.includes('"msg":"gateway listening"')) continue;
        clearTimeout(timer);
        const { port, operatorPort } = JSON.parse(line) as { port: number; operatorPort: number };
        resolve(fleetProxy(child, logs, port, operatorPort));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}: ${logs.join("\n")}`));
    });
  });
}

function fleetProxy(child: ChildProcess, logs: string[], port: number, operatorPort: number): FleetProxy {
  return {
    port,
    operatorPort,
    child,
    logs,
    call: (key) => post(port, `eth.${FLEET_DOMAIN}`, `/${key}/`),
    async knows(key) {
      const answer = await request(`http://127.0.0.1:${port}/${key}/`, {
        headers: { host: `eth.${FLEET_DOMAIN}` },
      });
      await answer.body.dump();
      if (answer.statusCode !== 401 && answer.statusCode !== 405)
        throw new Error(`a GET with a key answered ${answer.statusCode}`);
      return answer.statusCode === 405;
    },
    callPublic: () => post(port, `bsc-public.${FLEET_DOMAIN}`, "/"),
    async dependencyUp(dependency) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(
          `the proxy exited (${child.exitCode ?? child.signalCode}): ${logs.slice(-20).join("\n")}`,
        );
      const answer = await request(`http://127.0.0.1:${operatorPort}/metrics`);
      const text = await answer.body.text();
      const line = text
        .split("\n")
        .find((l) => l.startsWith(`gateway_dependency_up{dependency="${dependency}"}`));
      return line === undefined ? undefined : Number(line.split(" ").pop());
    },
    async leaseOutcomes() {
      const text = await (await request(`http://127.0.0.1:${operatorPort}/metrics`)).body.text();
      const out: Record<string, number> = {};
      for (const line of text.split("\n"))
        if (line.startsWith("gateway_rate_limit_leases_total{"))
          out[/outcome="(\w+)"/.exec(line)?.[1] ?? "?"] = Number(line.split(" ").pop());
      return out;
    },
  };
}

async function post(port: number, host: string, path: string): Promise<number> {
  const answer = await request(`http://127.0.0.1:${port}${path}`, {
    method: "POST",
    headers: { host, "content-type": "application/json" },
    body: BODY,
  });
  await answer.body.dump();
  return answer.statusCode;
}

/** Stops a proxy by its PID and waits for it to exit. */
export async function stopFleetProxy(proxy: FleetProxy): Promise<void> {
  if (proxy.child.exitCode !== null || proxy.child.signalCode !== null) return;
  const exited = new Promise((resolve) => proxy.child.once("exit", resolve));
  proxy.child.kill("SIGTERM");
  await exited;
}

/**
 * A control plane of a fleet's own, on the account store at `database`, its outbox in `dir`: what the
 * scale-out suites start beside their proxies. `mailer` takes the e-mails instead (a suite that reads a
 * confirmation token); `plans`, the plans the proxies' deployment config adds, as one deployment config
 * gives both.
 */
export function startFleetControlPlane(
  database: string,
  dir: string,
  mailer?: Mailer,
  plans?: GatewayConfig["plans"],
): Promise<ControlPlane> {
  return createControlPlane({
    ...(plans === undefined ? {} : { gateway: { ...DEFAULT_CONFIG, plans } }),
    config: {
      ...DEFAULT_ACCOUNTS,
      database,
      listen: { host: "127.0.0.1", port: 0 },
      mail: { from: "gw@example.com", outbox: join(dir, "outbox") },
    },
    networks: new Set(networkCodes),
    trustedProxies: [],
    logger: createLogger("silent"),
    ...(mailer === undefined ? {} : { mailer }),
  });
}
