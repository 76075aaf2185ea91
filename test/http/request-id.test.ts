import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { newRequestId } from "../../src/http/request-id.js";

// A made id is a UUID of RFC 9562's version 8: a random part drawn once per process, then a counter.
const UUID8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("newRequestId", () => {
  it("makes UUIDs that never repeat within a process", () => {
    const ids = Array.from({ length: 100_000 }, newRequestId);
    for (const id of ids.slice(0, 100)) expect(id).toMatch(UUID8);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("differs between processes in its random part", () => {
    const made = () =>
      execFileSync(
        process.execPath,
        [
          "--import",
          "tsx",
          "-e",
          'import("./src/http/request-id.ts").then((m) => console.log(m.newRequestId()))',
        ],
        { encoding: "utf8" },
      ).trim();
    const [a, b] = [made(), made()];
    expect(a).toMatch(UUID8);
    expect(b).toMatch(UUID8);
    expect(a.slice(0, 24)).not.toBe(b.slice(0, 24));
  });
});
