import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import SlowFirst from "./test/support/slow-first.js";

// The bench's own tests sit beside the bench (bench/test/), and run with the product's.
const TESTS = ["test/**/*.test.ts", "bench/**/*.test.ts"];
// Files that replace a module (vi.mock) need a module graph of their own: a module another file in the
// same worker imported first is the real one.
const MOCKING = ["test/accounts/key-prefix.test.ts"];

export default defineConfig({
  test: {
    // Most files spend their time waiting on sockets, timers and child processes, not computing: vitest's
    // default of one worker fewer than the cores ran the suite one file at a time on a 2-core machine, at
    // 60% of its CPU. Three workers there; as many as the cores on a larger one.
    maxWorkers: Math.max(3, availableParallelism()),
    testTimeout: 20_000,
    // expect.poll waits for a condition and passes the moment it holds; vitest's default deadline of one
    // second failed a dashboard test whose two API calls and a re-render took longer while Chromium and
    // two other test files shared the 2 cores. A longer deadline costs time only when a test fails.
    expect: { poll: { timeout: 10_000 } },
    hookTimeout: 30_000,
    // the files that take a minute start first, rather than last on a fresh clone (support/slow-first.ts)
    sequence: { sequencer: SlowFirst },
    projects: [
      {
        extends: true,
        test: {
          name: "suite",
          include: TESTS,
          exclude: MOCKING,
          // A scratch folder per run, every test process's TMPDIR, removed at the end; builds shared by files.
          globalSetup: ["test/support/global-setup.ts"],
          // One module graph per worker, not per file: importing the gateway's modules again for each of
          // some 190 files took a third of the suite's time (252 of 769 s of its files' time on a 2-core
          // machine). Each file starts and closes its own servers, and restores what it patches.
          isolate: false,
        },
      },
      { extends: true, test: { name: "mocking", include: MOCKING } },
    ],
  },
});
