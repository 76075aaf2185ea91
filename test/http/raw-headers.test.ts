import { describe, expect, it } from "vitest";
import { rawHeader } from "../../src/http/raw-headers.js";

// rawHeaders as Node hands them over: names in the client's own case, repeats kept in order.
const raw = [
  "Host",
  "eth.example",
  "Content-Type",
  "application/json",
  "X-Forwarded-For",
  "1.1.1.1",
  "content-type",
  "text/plain",
  "x-forwarded-for",
  "2.2.2.2",
];

describe("rawHeader", () => {
  it("finds a header whatever its case, and joins repeats the way req.headers does", () => {
    expect(rawHeader(raw, "x-forwarded-for")).toBe("1.1.1.1, 2.2.2.2");
    expect(rawHeader(raw, "host")).toBe("eth.example");
  });

  it("takes the first of a single-valued header, as Node does for Content-Type", () => {
    expect(rawHeader(raw, "content-type", true)).toBe("application/json");
  });

  it("answers undefined for a header that is not there, and never matches on a prefix", () => {
    expect(rawHeader(raw, "accept")).toBeUndefined();
    expect(rawHeader(raw, "content")).toBeUndefined();
    expect(rawHeader([], "host")).toBeUndefined();
  });
});
