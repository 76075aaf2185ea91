// A full run writes its results into bench/README.md between two markers, so the README shows the last
// full run and git keeps the ones before it.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

export const RESULTS_START = "<!-- results:start -->";
export const RESULTS_END = "<!-- results:end -->";

/** The commit a run measures (`git rev-parse --short HEAD`), and whether tracked files differ from it. */
export function commitUnderTest(root: string): string {
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  try {
    const head = git("rev-parse", "--short", "HEAD");
    return git("status", "--porcelain", "--untracked-files=no") === ""
      ? head
      : `${head} with uncommitted changes`;
  } catch {
    return "an unknown commit (no git)";
  }
}

/** `readme` with what lies between the markers replaced by `section`. */
export function withResults(readme: string, section: string): string {
  const start = readme.indexOf(RESULTS_START);
  const end = readme.indexOf(RESULTS_END, start);
  if (start < 0 || end < 0) throw new Error(`no ${RESULTS_START} … ${RESULTS_END} section to write into`);
  return `${readme.slice(0, start + RESULTS_START.length)}\n${section.trim()}\n${readme.slice(end)}`;
}

export function writeResults(file: string, section: string): void {
  writeFileSync(file, withResults(readFileSync(file, "utf8"), section));
}
