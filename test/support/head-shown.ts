import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import { DEFAULT_CACHE, DEFAULT_HEALTH } from "../../src/config/defaults.js";
import type { Endpoint } from "../../src/registry/types.js";
import { KEYS, type RunningGateway, startGateway } from "./gateway.js";
import { type LoopbackNode, startLoopbackNode } from "./loopback-node.js";
import type { NodeState } from "./node-software.js";
import { everyNodeInRotation } from "./rotation.js";
import { nodeState, softwareNode } from "./software-node.js";
import type { TypicalAnswer } from "./typical-calls.js";

/** How a test reads a label through the gateway: a JSON-RPC call's result, a GET's or a POST's JSON body. */
export interface LabelReads {
  rpc(method: string, params: unknown, path?: string): Promise<never>;
  get(path: string): Promise<unknown>;
}

/** The number at a member path of an answer (`heightAt(answer, "meta", "height")`). */
export function heightAt(answer: unknown, ...path: readonly string[]): number {
  let value = answer;
  for (const member of path) value = (value as Record<string, unknown> | undefined)?.[member];
  return value as number;
}

/** A read at the head, and another read whose answer shows the node's head: each gives the height it saw. */
export type HeadShownCase = readonly [
  name: string,
  head: (reads: LabelReads) => Promise<number>,
  other: (reads: LabelReads) => Promise<number>,
];

/**
 * With the answer cache on (the default) and one loopback node of `label`'s software at `height`, probes
 * off: a caller reads the head (its answer kept while the head stays), the node makes a block, another read
 * of theirs answers with that block's height in it (registry `heightIn`, `heightInPaths`), and they read the
 * head again: it must say that block, never the one before.
 */
export function headShownByAnswers(
  label: string,
  height: number,
  answers: Readonly<Record<string, TypicalAnswer>>,
  cases: readonly HeadShownCase[],
): void {
  describe(`${label}: a cached head call never answers below a head another read just showed`, () => {
    const endpoint = endpointsByLabel.get(label) as Endpoint;
    const state: NodeState = nodeState(endpoint, height);
    let node: LoopbackNode;
    let gw: RunningGateway;

    beforeAll(async () => {
      node = await startLoopbackNode(softwareNode(endpoint, () => state, [""], { answers }));
      gw = await startGateway({
        upstreams: { [label]: [{ url: node.url, name: "only" }] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 60_000 },
        cache: { ...DEFAULT_CACHE, enabled: true },
      });
      await everyNodeInRotation(gw, label);
    });
    afterAll(async () => {
      await gw?.close();
      await node?.close();
    });

    const reads: LabelReads = {
      async rpc(method, params, path = "/") {
        const r = await gw.call(label, `/${KEYS.all}${path}`, {
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
          headers: { "content-type": "application/json" },
        });
        expect(r.status, r.text).toBe(200);
        return (r.json as { result: never }).result;
      },
      async get(path) {
        const r = await gw.call(label, `/${KEYS.all}${path}`, { method: "GET" });
        expect(r.status, r.text).toBe(200);
        return r.json;
      },
    };

    for (const [name, head, other] of cases)
      it(`head, the node makes a block, ${name} shows it, head again`, async () => {
        const seen = [await head(reads)];
        state.height = (seen[0] as number) + 1;
        seen.push(await other(reads));
        seen.push(await head(reads));
        expect(seen).toEqual([seen[0], (seen[0] as number) + 1, (seen[0] as number) + 1]);
      });
  });
}
