import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { emitGenerated } from "./emit.js";
import { RegistryError } from "./load.js";
import { buildModel } from "./model.js";

const { values } = parseArgs({
  options: {
    registry: { type: "string", default: "registry/networks.yaml" },
    out: { type: "string", default: "generated" },
    check: { type: "boolean", default: false },
  },
});

const outDir = resolve(values.out);
try {
  const files = emitGenerated(buildModel(resolve(values.registry)));
  if (values.check) process.exitCode = check(outDir, files) ? 0 : 1;
  else write(outDir, files);
} catch (error) {
  if (!(error instanceof RegistryError)) throw error;
  console.error(`${values.registry} is invalid:\n${error.message}`);
  process.exitCode = 1;
}

function write(dir: string, files: Map<string, string>): void {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir)) if (!files.has(name)) rmSync(join(dir, name));
  for (const [name, text] of files) writeFileSync(join(dir, name), text);
  console.log(`codegen: wrote ${files.size} files to ${values.out}/`);
}

function check(dir: string, files: Map<string, string>): boolean {
  const problems: string[] = [];
  let present: string[] = [];
  try {
    present = readdirSync(dir);
  } catch {
    problems.push(`${values.out}/ is missing`);
  }
  for (const name of present)
    if (!files.has(name)) problems.push(`${values.out}/${name} is not produced by the registry`);
  for (const [name, text] of files) {
    let current: string | undefined;
    try {
      current = readFileSync(join(dir, name), "utf8");
    } catch {
      problems.push(`${values.out}/${name} is missing`);
      continue;
    }
    if (current !== text)
      problems.push(
        `${values.out}/${name} differs from what ${values.registry} produces${firstDifference(current, text)}`,
      );
  }
  if (problems.length === 0) {
    console.log(`codegen:check: ${values.out}/ matches ${values.registry}`);
    return true;
  }
  console.error(
    `codegen:check failed:\n${problems.map((p) => `  - ${p}`).join("\n")}\nRun \`npm run codegen\` and commit the result; never edit ${values.out}/ by hand.`,
  );
  return false;
}

function firstDifference(actual: string, expected: string): string {
  const a = actual.split("\n");
  const e = expected.split("\n");
  for (let i = 0; i < Math.max(a.length, e.length); i++) {
    if (a[i] !== e[i]) return ` (first at line ${i + 1})`;
  }
  return "";
}
