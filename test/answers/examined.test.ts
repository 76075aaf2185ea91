import { describe, expect, it } from "vitest";
import { learnHeights } from "../../src/answers/examined.js";
import type { HeightInAnswer } from "../../src/answers/read-need.js";
import type { UpstreamCall } from "../../src/upstream/policy.js";
import type { Upstream } from "../../src/upstream/upstreams.js";

// What an answer tells the label's served head: the flat common answer read without JSON.parse must read
// exactly what JSON.parse reads, and a caller's id can never pass for a height.

function learnt(text: string, rule: HeightInAnswer): number[] {
  const heights: number[] = [];
  const call = {
    reads: { learn: [rule] },
    group: { answeredHeight: (_upstream: Upstream, height: number) => heights.push(height) },
  } as unknown as UpstreamCall;
  learnHeights(call, {} as Upstream, text);
  return heights;
}
const head: HeightInAnswer = { id: undefined, path: ["result"], encoding: "hex-quantity", isHead: true };

describe("learnHeights", () => {
  it("reads the head call's answer, flat or not, as JSON.parse does", () => {
    expect(learnt('{"jsonrpc":"2.0","id":1,"result":"0x1b4"}\n', head)).toEqual([0x1b4]);
    expect(learnt('{"id":"a","jsonrpc":"2.0","result":"0x10"}', head)).toEqual([16]);
    expect(learnt('{ "jsonrpc": "2.0", "id": null, "result": "0xff" }', head)).toEqual([255]);
  });

  it("an id that holds a fake result, an error, or text that is not JSON shows no height", () => {
    expect(learnt('{"jsonrpc":"2.0","id":"\\",\\"result\\":\\"0xffffff","result":"0x2"}', head)).toEqual([2]);
    expect(learnt('{"jsonrpc":"2.0","id":1,"result":"0x2","result":"0x9"}', head)).toEqual([9]);
    expect(learnt('{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"0x5"}}', head)).toEqual([]);
    expect(learnt('{"jsonrpc":"2.0","id":1,"result":"0x1"', head)).toEqual([]);
    expect(learnt('{"jsonrpc":"2.0","id":1,"result":"latest"}', head)).toEqual([]);
  });

  it("finds a batch call's answer by its id, and a block's height by its member path", () => {
    const rule: HeightInAnswer = {
      id: '"b"',
      path: ["result", "number"],
      encoding: "hex-quantity",
      isHead: false,
    };
    const text =
      '[{"jsonrpc":"2.0","id":"a","result":{"number":"0x1"}},{"jsonrpc":"2.0","id":"b","result":{"number":"0x7"}}]';
    expect(learnt(text, rule)).toEqual([7]);
  });
});
