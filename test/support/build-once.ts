import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { eventually } from "./eventually.js";

/**
 * Runs `build` into `dir` once for every test process of a run: the first to create `dir` builds, the others
 * wait (up to `waitMs`) for its `built` or `failed` mark. `what` names the build in a failure.
 */
export async function buildOnce(
  dir: string,
  what: string,
  waitMs: number,
  build: (dir: string) => Promise<unknown>,
): Promise<void> {
  const done = join(dir, "built");
  const failed = join(dir, "failed");
  mkdirSync(dirname(dir), { recursive: true });
  try {
    mkdirSync(dir); // the one process whose mkdir succeeds builds
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    await eventually(() => existsSync(done) || existsSync(failed), waitMs, `${what} another file builds`);
    if (existsSync(failed)) throw new Error(`${what}'s build failed: ${readFileSync(failed, "utf8")}`);
    return;
  }
  try {
    await build(dir);
  } catch (error) {
    writeFileSync(failed, String((error as Error).stack ?? error));
    throw error;
  }
  writeFileSync(done, "");
}
