import { describe, expect, it } from "vitest";
import { RESULTS_END, RESULTS_START, withResults } from "../readme-results.js";

const readme = [
  "# Benchmarks",
  "",
  "## Last full run",
  "",
  RESULTS_START,
  "old table",
  RESULTS_END,
  "",
  "after",
].join("\n");

describe("README results section", () => {
  it("replaces what lies between the markers and nothing else", () => {
    const written = withResults(readme, "| new | table |\n");
    expect(written).toBe(
      [
        "# Benchmarks",
        "",
        "## Last full run",
        "",
        RESULTS_START,
        "| new | table |",
        RESULTS_END,
        "",
        "after",
      ].join("\n"),
    );
    expect(withResults(written, "| new | table |")).toBe(written);
  });

  it("refuses a README without both markers, in order", () => {
    expect(() => withResults("# Benchmarks\n", "x")).toThrow(RESULTS_START);
    expect(() => withResults(`${RESULTS_END}\n${RESULTS_START}\n`, "x")).toThrow(RESULTS_START);
  });
});
