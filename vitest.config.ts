import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The bench's own tests sit beside the bench (bench/test/), and run with the product's.
    include: ["test/**/*.test.ts", "bench/**/*.test.ts"],
    // A scratch folder per run, every test process's TMPDIR, removed at the end; builds shared by files.
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
