import type { Worker } from "node:cluster";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ShareMessage } from "../../src/proxy/cluster-shares.js";
import { ClusterStore, RECALL_HOLD_MS } from "../../src/proxy/cluster-store.js";

// The primary's side of what a cluster's workers share without Redis (src/proxy/cluster-store.ts), with
// workers that record what they are sent, and a clock the test moves: a head is passed on only when it is
// the highest kept, and kept as long as Redis keeps it (60 s), so that a chain started again is followed a
// minute later; a filter's node and maker are answered to any worker that asks, for 10 minutes past the
// last poll through any worker.

function fakeWorker(): Worker & { readonly sent: ShareMessage[] } {
  const sent: ShareMessage[] = [];
  return {
    sent,
    isDead: () => false,
    isConnected: () => true,
    send: (message: ShareMessage) => {
      sent.push(message);
      return true;
    },
  } as unknown as Worker & { readonly sent: ShareMessage[] };
}

describe("the primary's store of the workers' heads and filters", () => {
  it("passes a rise to the other workers, never back to its sender, and a lower head to none", () => {
    let now = 1_000_000;
    const [a, b, c] = [fakeWorker(), fakeWorker(), fakeWorker()];
    const store = new ClusterStore(
      () => [a, b, c],
      () => now,
    );
    expect(store.take(a, { type: "gateway:share:head", label: "eth", height: 10 })).toBe(true);
    expect(a.sent).toEqual([]);
    expect(b.sent).toEqual([{ type: "gateway:share:head", label: "eth", height: 10 }]);
    expect(c.sent).toEqual(b.sent);
    // b served 9 after it heard 10 (it rose before the news came): nobody is told of a lower head
    store.take(b, { type: "gateway:share:head", label: "eth", height: 9 });
    expect(a.sent).toEqual([]);
    // a worker started again gets the heads kept, as readings
    const d = fakeWorker();
    store.seed(d);
    expect(d.sent).toEqual([{ type: "gateway:share:head", label: "eth", height: 10, seed: true }]);
    // a minute without a rise (the chain was started again): the next head is passed on, and seeds no more
    now += 60_001;
    store.take(b, { type: "gateway:share:head", label: "eth", height: 3 });
    expect(a.sent).toEqual([{ type: "gateway:share:head", label: "eth", height: 3 }]);
    now += 60_001;
    const e = fakeWorker();
    store.seed(e);
    expect(e.sent).toEqual([]);
  });

  it("answers a recall with the filter's node and maker, while it is polled within 10 minutes", () => {
    let now = 1_000_000;
    const [a, b] = [fakeWorker(), fakeWorker()];
    const store = new ClusterStore(
      () => [a, b],
      () => now,
    );
    const group = "eth:*";
    store.take(a, { type: "gateway:share:handle", group, owner: "FNcaller1", name: "0x1", node: "anvil-0" });
    const recall = (recallId: number, owner: string) => {
      store.take(b, { type: "gateway:share:recall", recall: recallId, group, owner, names: ["0x1", "0x2"] });
      return b.sent.at(-1);
    };
    expect(recall(1, "FNcaller1")).toEqual({
      type: "gateway:share:recalled",
      recall: 1,
      handles: [
        { node: "anvil-0", owner: "FNcaller1" },
        { node: undefined, owner: undefined },
      ],
    });
    // another caller asking by the same name learns whose it is, not where it is
    expect(recall(2, "FNcaller2")).toMatchObject({ handles: [{ node: undefined, owner: "FNcaller1" }, {}] });
    // polled through b 9 minutes on: kept 10 minutes from then
    now += 9 * 60_000;
    store.take(b, { type: "gateway:share:handle", group, owner: "FNcaller1", name: "0x1" });
    now += 9 * 60_000;
    expect(recall(3, "FNcaller1")).toMatchObject({ handles: [{ node: "anvil-0", owner: "FNcaller1" }, {}] });
    // 10 minutes past its last poll it is forgotten, and a poll then does not bring it back: a recall of
    // filters the primary knows nothing of waits for a worker's word of them, then is answered without
    vi.useFakeTimers();
    now += 60_001;
    store.take(b, { type: "gateway:share:handle", group, owner: "FNcaller1", name: "0x1" });
    expect(recall(4, "FNcaller1")).toMatchObject({ type: "gateway:share:recalled", recall: 3 });
    vi.advanceTimersByTime(RECALL_HOLD_MS);
    expect(b.sent.at(-1)).toMatchObject({ recall: 4, handles: [{ node: undefined, owner: undefined }, {}] });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it("holds a recall that comes before the word of the filter it asks for, through another worker", () => {
    vi.useFakeTimers();
    const [a, b] = [fakeWorker(), fakeWorker()];
    const store = new ClusterStore(() => [a, b]);
    const group = "eth:*";
    // the caller's poll through b, whose recall reaches the primary before a's word that it made the filter
    store.take(b, { type: "gateway:share:recall", recall: 7, group, owner: "FNcaller1", names: ["0x9"] });
    expect(b.sent).toEqual([]);
    store.take(a, { type: "gateway:share:handle", group, owner: "FNcaller1", name: "0x9", node: "anvil-1" });
    expect(b.sent).toEqual([
      { type: "gateway:share:recalled", recall: 7, handles: [{ node: "anvil-1", owner: "FNcaller1" }] },
    ]);
    vi.advanceTimersByTime(RECALL_HOLD_MS);
    expect(b.sent).toHaveLength(1);
  });

  it("leaves every other message to the primary's own listeners", () => {
    const store = new ClusterStore(() => []);
    expect(store.take(fakeWorker(), { type: "gateway:start-failed", reason: "port taken" })).toBe(false);
    expect(store.take(fakeWorker(), undefined)).toBe(false);
  });
});
