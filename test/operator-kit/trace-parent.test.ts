import { parseTraceParent } from "@opentelemetry/core";
import { describe, expect, it } from "vitest";
import { callerTraceParent, passedTraceParent } from "../../src/tracing/trace-parent.js";

// The caller's traceparent, read as W3C Trace Context says and as @opentelemetry/core's propagator reads
// it (the gateway parses it itself so that the SDK loads only with tracing on: src/tracing/start.ts).

const ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";
const headers = (...values: string[]) => values.flatMap((v) => ["traceparent", v]);

describe("callerTraceParent", () => {
  const cases = [
    `00-${ID}-${SPAN}-01`,
    `00-${ID}-${SPAN}-00`,
    `01-${ID}-${SPAN}-01-future-part`,
    `00-${ID}-${SPAN}-01-extra`,
    `ff-${ID}-${SPAN}-01`,
    `00-${"0".repeat(32)}-${SPAN}-01`,
    `00-${ID}-${"0".repeat(16)}-01`,
    `00-${ID.toUpperCase()}-${SPAN}-01`,
    `00-${ID}-${SPAN}`,
    `0-${ID}-${SPAN}-01`,
    "",
    "garbage",
  ];
  for (const value of cases)
    it(`agrees with @opentelemetry/core on "${value}"`, () => {
      const ours = callerTraceParent(headers(value));
      const theirs = parseTraceParent(value);
      expect(ours === undefined ? null : { ...ours, isRemote: undefined }).toEqual(
        theirs === null ? null : { ...theirs, isRemote: undefined },
      );
    });

  it("reads none from two headers, and passes a good one on as version 00", () => {
    expect(callerTraceParent(headers(`00-${ID}-${SPAN}-01`, `00-${ID}-${SPAN}-00`))).toBeUndefined();
    expect(passedTraceParent(headers(`01-${ID}-${SPAN}-03-more`))).toBe(`00-${ID}-${SPAN}-01`);
    expect(passedTraceParent(["x-other", "1"])).toBeUndefined();
  });
});
