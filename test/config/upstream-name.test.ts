import { describe, expect, it } from "vitest";
import { upstreamName } from "../../src/config/upstream-name.js";

// An upstream's one name, in logs, metrics and the operator API: never its credentials or a key in its path.
describe("an upstream's name", () => {
  it("is the operator's when given", () => {
    expect(upstreamName({ url: "https://user:pass@node.example:8545/", name: "fra-1" })).toBe("fra-1");
  });

  it("is else its origin and base path, without credentials or what looks like a key in the path", () => {
    expect(upstreamName("http://user:secret@node.example:8332/")).toBe("http://node.example:8332");
    expect(upstreamName("http://node.example:9650/ext/bc/C/rpc")).toBe(
      "http://node.example:9650/ext/bc/C/rpc",
    );
    expect(upstreamName("https://mainnet.infura.io/v3/9aa3d95b3bc440fa88ea12eaa4456161")).toBe(
      "https://mainnet.infura.io/v3/…",
    );
    expect(upstreamName("https://eth.getblock.io/mainnet/Ab3dE5fGh7iJk9LmNo/")).toBe(
      "https://eth.getblock.io/mainnet/…",
    );
    // a long word without digits is a path, not a key
    expect(upstreamName("http://node.example/jsonrpc-over-http-endpoint")).toBe(
      "http://node.example/jsonrpc-over-http-endpoint",
    );
  });
});
