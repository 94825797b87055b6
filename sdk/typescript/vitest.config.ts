import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The stack tests run in order against one session.
    sequence: { concurrent: false },
    fileParallelism: false,
    testTimeout: 90_000,
  },
});
