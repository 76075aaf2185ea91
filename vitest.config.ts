import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The bench's own tests sit beside the bench (bench/test/), and run with the product's.
    include: ["test/**/*.test.ts", "bench/**/*.test.ts"],
    // A scratch folder per run, every test process's TMPDIR, removed at the end; builds shared by files.
    globalSetup: ["test/support/global-setup.ts"],
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
  },
});
