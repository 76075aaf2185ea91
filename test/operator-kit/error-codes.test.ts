import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ERRORS } from "../../src/errors/table.js";
import { ROOT } from "../registry/helpers.js";

// gateway_requests_total's `code` is the gateway's error code, from its error table (docs/operations.md:
// "the gateway's error code (errors.md), empty when it relayed an answer"). A rule, a rule's unit test or a
// dashboard panel that names another value matches no series a gateway ever exports: an alert that never
// fires, a panel that stays empty, a unit test that proves a case that cannot happen.
const FILES = [
  "deploy/prometheus/gateway-rules.yml",
  "deploy/prometheus/gateway-rules.test.yml",
  "deploy/grafana/gateway-dashboard.json",
];

/** The code values a file's PromQL matchers and series name: code="X", code!="X", and regexes' alternatives. */
function codesIn(text: string): string[] {
  const unescaped = text.replaceAll('\\"', '"');
  return [...unescaped.matchAll(/\bcode\s*(?:=~|!~|=|!=)\s*"([^"]*)"/g)].flatMap((m) =>
    (m[1] as string).split("|").filter((code) => code !== "" && !/[.*+?^$()[\]{}\\]/.test(code)),
  );
}

describe("the operator kit names error codes the gateway makes", () => {
  it("reads the matchers (the dashboard's quota panel names QUOTA_EXCEEDED)", () => {
    expect(codesIn(readFileSync(join(ROOT, FILES[2] as string), "utf8"))).toContain("QUOTA_EXCEEDED");
  });
  for (const file of FILES)
    it(file, () => {
      const unknown = codesIn(readFileSync(join(ROOT, file), "utf8")).filter((code) => !(code in ERRORS));
      expect(unknown).toEqual([]);
    });
});
