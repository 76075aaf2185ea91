import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { newRequestId, RequestIds } from "../../src/http/request-id.js";

// A made id is a UUID of RFC 9562's version 8: a random part drawn once per process, then a counter.
const UUID8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("newRequestId", () => {
  it("makes UUIDs that never repeat within a process", () => {
    const ids = Array.from({ length: 100_000 }, newRequestId);
    for (const id of ids.slice(0, 100)) expect(id).toMatch(UUID8);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("counts on across its halves, and from 2⁴⁸ - 1 back to zero", () => {
    const prefix = "01234567-89ab-8cde-9f01-";
    const ids = new RequestIds(prefix, 0xfffffe);
    expect([ids.next(), ids.next(), ids.next()]).toEqual([
      `${prefix}000000fffffe`,
      `${prefix}000000ffffff`,
      `${prefix}000001000000`,
    ]);
    const last = new RequestIds(prefix, 2 ** 48 - 1);
    expect([last.next(), last.next()]).toEqual([`${prefix}ffffffffffff`, `${prefix}000000000000`]);
    expect(new RequestIds(prefix, 0x123456789abc).next()).toBe(`${prefix}123456789abc`);
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
