import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { stringify } from "yaml";
import type { CpuBudget } from "./cpu-budget.js";
import type { Target } from "./load.js";
import { freePort, type Running, start } from "./processes.js";

const CACHE = join("node_modules", ".cache", "gateway-bench");
const COMPILED = [
  "upstream.ts",
  "forwarder.ts",
  "targets/floor.ts",
  "targets/ceiling.ts",
  "targets/http-proxy.ts",
  "targets/fastify-proxy.ts",
  "heap-on-signal.ts",
];

/** A bench file run as plain JavaScript, like the gateway's own bundle, so no loader sits in its CPU or RSS. */
export const compiled = (file: string) => [join(CACHE, file.replace(/\.ts$/, ".mjs"))];
/** A bench file run under tsx, for a target that imports src/ itself. */
export const tsx = (file: string) => ["--import", "tsx", join("bench", file)];

/** A bench node (upstream.ts): JSON-RPC and REST over HTTP, subscriptions over WebSocket. */
export interface BenchNode {
  /** The node as a target of its own ("direct"), and the process whose CPU per request is read. */
  readonly target: Target;
  readonly http: string;
  readonly ws: string;
  /** `POST` sends one `newHeads` notification to every subscriber. */
  readonly pushUrl: string;
}

/**
 * Starts the processes of a run, each on a port of its own, and keeps them so that none outlives the run.
 * A scenario stops what it started; main.ts stops whatever a scenario left running before the next one.
 */
export class Launcher {
  /** A directory of this run's own: deployment files, the synthetic registry. */
  readonly dir = mkdtempSync(join(tmpdir(), "gateway-bench-"));
  readonly #running: Running[] = [];

  constructor(readonly root: string) {
    process.once("exit", () => {
      for (const r of this.#running) r.child.kill("SIGKILL");
    });
  }

  /** Builds dist/ as `npm start` does, and the other targets into node_modules/.cache/gateway-bench/. */
  async build(): Promise<void> {
    execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], {
      cwd: this.root,
      stdio: "inherit",
    });
    await build({
      entryPoints: COMPILED.map((file) => join(this.root, "bench", file)),
      outbase: join(this.root, "bench"),
      outdir: join(this.root, CACHE),
      outExtension: { ".js": ".mjs" },
      bundle: true,
      packages: "external",
      platform: "node",
      target: "node20",
      format: "esm",
      logLevel: "warning",
    });
  }

  /** A bench entry (`compiled` or `tsx`), told its port in BENCH_PORT: `port`, else a free one. */
  async start(
    name: string,
    entry: readonly string[],
    env: Record<string, string>,
    { gateway = false, port: given }: { gateway?: boolean; port?: number } = {},
  ): Promise<Target> {
    const port = given ?? (await freePort());
    return this.#keep({
      ...(await start(name, entry, { ...env, BENCH_PORT: String(port) }, port, this.root)),
      gateway,
    });
  }

  /**
   * A bench node of its own; the shared one is `Bench.node`. With `again`, a node that was stopped or
   * killed starts anew on that one's ports, as a restarted node comes back where its gateway looks for it.
   */
  async startNode(name: string, again?: BenchNode, env: Record<string, string> = {}): Promise<BenchNode> {
    const port = again === undefined ? undefined : Number(new URL(again.http).port);
    const wsPort = again === undefined ? await freePort() : Number(new URL(again.ws).port);
    const target = await this.start(
      name,
      compiled("upstream.ts"),
      { ...env, BENCH_WS_PORT: String(wsPort) },
      port === undefined ? {} : { port },
    );
    return {
      target,
      http: `http://127.0.0.1:${target.port}`,
      ws: `ws://127.0.0.1:${wsPort}`,
      pushUrl: `http://127.0.0.1:${wsPort}/push`,
    };
  }

  /** Writes a gateway deployment (gateway-config.ts makes one) into the run's directory; returns its path. */
  writeDeployment(name: string, config: object): string {
    const file = join(this.dir, `${name}.yaml`);
    writeFileSync(file, stringify(config));
    return file;
  }

  /**
   * The gateway as `npm start` runs it: the built binary, with the deployment file in GATEWAY_CONFIG and
   * `workers` in GATEWAY_WORKERS, inside `budget` when one is given. Its operator API listens where the
   * deployment says when `ownOperatorPort`, else on a free port of its own (GATEWAY_OPERATOR_PORT): two
   * gateways of one deployment file, as the HTTP scenario runs, would both take the default 8082, and the
   * second would exit.
   */
  async startGateway(
    name: string,
    {
      deployment,
      workers = 1,
      budget,
      ownOperatorPort = false,
      nodeArgs = [],
      entry = "dist/gateway.js",
    }: {
      deployment: string;
      workers?: number;
      budget?: CpuBudget;
      ownOperatorPort?: boolean;
      /** Node's own flags for this gateway alone (`--cpu-prof`). */
      nodeArgs?: readonly string[];
      /** Another build's entry (a copy of an earlier dist/gateway.js), for an A/B of builds. */
      entry?: string;
    },
  ): Promise<Target> {
    const port = await freePort();
    const env: Record<string, string> = {
      GATEWAY_CONFIG: deployment,
      GATEWAY_WORKERS: String(workers),
      GATEWAY_PORT: String(port),
    };
    if (!ownOperatorPort) env.GATEWAY_OPERATOR_PORT = String(await freePort());
    return this.#keep({
      ...(await start(name, [...nodeArgs, entry], env, port, this.root, budget?.wrap)),
      gateway: true,
    });
  }

  /** Stops every process it started but those in `keep`. */
  async stopAll(keep: readonly Running[] = []): Promise<void> {
    await Promise.all(this.#running.filter((r) => !keep.includes(r)).map((r) => r.stop()));
  }

  #keep(target: Target): Target {
    this.#running.push(target);
    return target;
  }
}
