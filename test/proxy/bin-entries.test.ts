import { execFile } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../registry/helpers.js";
import { builtBundles } from "../support/bundles.js";

// package.json's bin entries as an installed package has them: npm links each as a command, which the
// system runs as a file. So each built file must begin with `#!/usr/bin/env node` and be executable; each
// is run here as the file itself, never through `node <file>`.

/** The run's bundles (support/bundles.ts). */
let OUT = "";
const bins = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin: Record<string, string> })
  .bin;

/** How each command is asked something harmless, and the exit status and output it answers with. */
const RUNS: Record<string, { args: string[]; env?: NodeJS.ProcessEnv; code: number; output: RegExp }> = {
  "node-gateway": { args: ["--version"], code: 0, output: /^node-gateway \d+\.\d+\.\d+ \(registry / },
  "node-gateway-admin": {
    args: ["--version"],
    code: 0,
    output: /^node-gateway admin \d+\.\d+\.\d+ \(registry /,
  },
  // a config that is not there makes the control plane say so and exit 2
  "node-gateway-control-plane": {
    args: [],
    env: { GATEWAY_CONFIG: join(tmpdir(), "no-such-deployment.yaml") },
    code: 2,
    output: /^invalid configuration/,
  },
};

beforeAll(async () => {
  OUT = (await builtBundles()).dir;
}, 60_000);

function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  return new Promise<{ code: number | string; out: string; err: string }>((resolve) => {
    execFile(
      file,
      args,
      {
        cwd: tmpdir(),
        // `env node` finds the node running this test first
        env: { PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`, ...env },
      },
      (error, out, err) => resolve({ code: error ? (error.code ?? 1) : 0, out, err }),
    );
  });
}

describe("the package's bin entries, built", () => {
  it("are the three commands this file runs", () => {
    expect(Object.keys(bins).sort()).toEqual(Object.keys(RUNS).sort());
  });

  it.each(Object.entries(bins))("%s (%s) begins with #!/usr/bin/env node and is executable", (_, path) => {
    const file = join(OUT, basename(path));
    expect(readFileSync(file, "utf8").split("\n", 1)[0]).toBe("#!/usr/bin/env node");
    expect(statSync(file).mode & 0o111).toBe(0o111);
  });

  it.each(Object.entries(bins))("%s (%s) runs as a command", async (name, path) => {
    const expected = RUNS[name];
    if (expected === undefined) throw new Error(`no run for ${name}`);
    const { code, out, err } = await run(join(OUT, basename(path)), expected.args, expected.env);
    expect({ code, err: code === 0 ? err : "" }).toEqual({ code: expected.code, err: "" });
    expect(code === 0 ? out : err).toMatch(expected.output);
  });
});
