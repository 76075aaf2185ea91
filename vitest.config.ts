import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The bench's own tests sit beside the bench (bench/test/), and run with the product's.
    include: ["test/**/*.test.ts", "bench/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
