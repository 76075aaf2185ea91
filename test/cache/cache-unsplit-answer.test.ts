import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CACHE } from "../../src/config/defaults.js";
import { eventually } from "../support/eventually.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import { type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";

// Calls coalesced on one node call whose answer the cache cannot split at one id: a proxy in front of a
// node that answers a single call as a one-element array, one that answers with an HTML page, and one with
// a JSON error of its own. Every caller gets an answer, never one that carries another caller's id. None
// of them is a success, which alone is shared: the callers that waited on the call ask again, together,
// once (docs/cache.md), so the node is asked twice, not once per caller.
describe("a coalesced call's answer the cache cannot split at its id", () => {
  let node: LoopbackNode;
  let gw: RunningGateway;
  let release: () => void = () => {};
  const ARRAY_BLOCK = "0x21";
  const PAGE_BLOCK = "0x22";
  const JSON_ERROR_BLOCK = "0x23";

  beforeAll(async () => {
    node = await startLoopbackNode(async (req) => {
      const call = JSON.parse(req.body) as { id: unknown; params: unknown[] };
      const block = call.params[0];
      if (block === ARRAY_BLOCK) {
        // the first one is held until the others wait on it
        if (node.requests.filter((r) => r.body.includes(ARRAY_BLOCK)).length === 1)
          await new Promise<void>((resolve) => {
            release = resolve;
          });
        return { body: [{ jsonrpc: "2.0", id: call.id, result: { number: block } }] };
      }
      if (block === PAGE_BLOCK) {
        if (node.requests.filter((r) => r.body.includes(PAGE_BLOCK)).length === 1)
          await new Promise<void>((resolve) => {
            release = resolve;
          });
        return { status: 502, headers: { "content-type": "text/html" }, body: "<html>bad gateway</html>" };
      }
      if (block === JSON_ERROR_BLOCK) {
        if (node.requests.filter((r) => r.body.includes(JSON_ERROR_BLOCK)).length === 1)
          await new Promise<void>((resolve) => {
            release = resolve;
          });
        return { status: 502, body: { message: "upstream overloaded" } };
      }
      return { body: { jsonrpc: "2.0", id: call.id, result: "0x1" } };
    });
    gw = await startGateway({ upstreams: { eth: [node.url] }, cache: { ...DEFAULT_CACHE, enabled: true } });
  });
  afterAll(async () => {
    await gw?.close();
    await node?.close();
  });

  const ask = (id: number, block: string) =>
    gw.call("eth", `/${KEYS.all}`, {
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBlockByNumber", params: [block, false] }),
    });
  const waiting = () => gw.metric("gateway_cache_waiting", { label: "eth" });

  it("an array that may hold the first caller's id goes to it alone: each other caller's call is asked itself", async () => {
    const first = ask(1, ARRAY_BLOCK);
    await eventually(() => node.requests.length === 1, 2_000, "the first call at the node");
    const others = [ask(2, ARRAY_BLOCK), ask(3, ARRAY_BLOCK)];
    await eventually(async () => (await waiting()) === 2, 2_000, "two calls waiting");
    release();
    const answers = await Promise.all([first, ...others]);
    expect(answers.map((a) => (a.json as { id: number }[])[0]?.id)).toEqual([1, 2, 3]);
    expect(node.requests.filter((r) => r.body.includes(ARRAY_BLOCK))).toHaveLength(3);
  });

  it("a page that is no JSON goes to the caller it answered; the callers waiting ask once more and get the page again", async () => {
    const before = node.requests.length;
    const first = ask(1, PAGE_BLOCK);
    await eventually(() => node.requests.length === before + 1, 2_000, "the first call at the node");
    const other = ask(2, PAGE_BLOCK);
    await eventually(async () => (await waiting()) === 1, 2_000, "one call waiting");
    release();
    const answers = await Promise.all([first, other]);
    for (const answer of answers) expect(answer.status).toBeGreaterThanOrEqual(500);
    expect(node.requests.filter((r) => r.body.includes(PAGE_BLOCK))).toHaveLength(2);
  });

  it("a JSON error that names no id (a provider's overload answer): the callers waiting ask again on one call", async () => {
    const before = node.requests.length;
    const first = ask(1, JSON_ERROR_BLOCK);
    await eventually(() => node.requests.length === before + 1, 2_000, "the first call at the node");
    const others = [ask(2, JSON_ERROR_BLOCK), ask(3, JSON_ERROR_BLOCK)];
    await eventually(async () => (await waiting()) === 2, 2_000, "two calls waiting");
    release();
    for (const answer of await Promise.all([first, ...others]))
      expect(answer.status).toBeGreaterThanOrEqual(500);
    expect(node.requests.filter((r) => r.body.includes(JSON_ERROR_BLOCK))).toHaveLength(2);
  });
});
