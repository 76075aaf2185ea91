import { describe, expect, it } from "vitest";
import { ethereumPolicy } from "../../generated/policies.js";
import { RememberedSubscriptions } from "../../src/ws/subscriptions.js";

// How a remembered subscription judges notifications by position, with the registry's own EVM rules: on
// the node it was made on, everything the node pushes is sent, in the node's order (a reorganisation's
// heads and logs are news); after a move, what the new node repeats of what the client saw is dropped
// until it pushes something new, a jump asks for a fill, and a log taken back by a reorganisation is
// always sent.

const rules = ethereumPolicy.jsonrpc?.subscriptions;
const head = (n: number) => `{"number":"0x${n.toString(16)}","parentHash":"0x${"11".repeat(32)}"}`;
const log = (block: number, index: number, removed = false) =>
  `{"blockNumber":"0x${block.toString(16)}","logIndex":"0x${index.toString(16)}","removed":${removed}}`;

describe("a remembered subscription's positions", () => {
  it("the registry gives EVM newHeads and logs their rules", () => {
    const remembered = new RememberedSubscriptions(rules);
    expect(remembered.add("eth_subscribe", '["newHeads"]', ["newHeads"], '"0x1"').kind?.heads).toBeDefined();
    expect(remembered.add("eth_subscribe", '["logs",{}]', ["logs", {}], '"0x2"').kind?.events).toBeDefined();
    expect(
      remembered.add("eth_subscribe", '["newPendingTransactions"]', ["newPendingTransactions"], '"0x3"').kind,
    ).toBeUndefined();
    expect(remembered.size).toBe(3);
  });

  it("heads: the node's own order on its node; after a move, a repeat is dropped and a jump asks for a fill", () => {
    const subscription = new RememberedSubscriptions(rules).add(
      "eth_subscribe",
      '["newHeads"]',
      ["newHeads"],
      '"0x1"',
    );
    expect(subscription.judge(head(10))).toBe("send");
    expect(subscription.judge(head(11))).toBe("send");
    // a sibling that replaces the head, and a reorganisation to a shorter chain: the node's news
    expect(subscription.judge(head(11))).toBe("send");
    expect(subscription.judge(head(10))).toBe("send");
    expect(subscription.judge(head(11))).toBe("send");
    // a move: the new node's heads up to the last one sent are repeats
    subscription.afterMove = true;
    subscription.fillNext = true;
    expect(subscription.judge(head(11))).toBe("drop");
    expect(subscription.judge(head(9))).toBe("drop");
    expect(subscription.judge(head(14))).toBe("fill");
    expect(subscription.lastNumber).toBe(11);
    expect(subscription.judge(head(12))).toBe("send");
    expect(subscription.lastNumber).toBe(12);
    // past the last one sent, the new node's own order holds again
    expect(subscription.judge(head(12))).toBe("send");
  });

  it("logs: a reorganisation's are sent on its node; after a move, one sent is dropped by block and index", () => {
    const subscription = new RememberedSubscriptions(rules).add(
      "eth_subscribe",
      '["logs",{}]',
      ["logs", {}],
      '"0x2"',
    );
    expect(subscription.judge(log(5, 0))).toBe("send");
    expect(subscription.judge(log(5, 1))).toBe("send");
    // taken back by a reorganisation, then the same event mined again in the block that replaced it
    expect(subscription.judge(log(5, 1, true))).toBe("send");
    expect(subscription.judge(log(5, 0, true))).toBe("send");
    expect(subscription.judge(log(5, 0))).toBe("send");
    subscription.afterMove = true;
    expect(subscription.judge(log(5, 0))).toBe("drop");
    expect(subscription.judge(log(4, 7))).toBe("drop");
    expect(subscription.judge(log(6, 0))).toBe("send");
    expect(subscription.judge(log(5, 3))).toBe("send");
    // a move's repeats dropped, then a reorganisation: the log it took back, and the same event mined
    // again, while a repeat of a log sent before the one taken back is still dropped
    subscription.afterMove = true;
    expect(subscription.judge(log(5, 3))).toBe("drop");
    expect(subscription.judge(log(5, 3, true))).toBe("send");
    expect(subscription.judge(log(5, 2))).toBe("drop");
    expect(subscription.judge(log(5, 3))).toBe("send");
  });

  it("an unsubscribe's params find the subscription by the id the client knows, after a move too", () => {
    const remembered = new RememberedSubscriptions(rules);
    const subscription = remembered.add("eth_subscribe", '["newHeads"]', ["newHeads"], '"0xabc"');
    remembered.rebind(subscription, '"0xdef"');
    expect(remembered.named(["0xabc"])).toBe(subscription);
    expect(remembered.named(["0xdef"])).toBeUndefined();
    const pushed = new Map([
      ["params", `{"subscription":"0xdef","result":${head(3)}}`],
      ["method", '"eth_subscription"'],
    ]);
    expect(remembered.notified(pushed)?.subscription).toBe(subscription);
    expect(subscription.notification("subscription", head(3))).toBe(
      `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0xabc","result":${head(3)}}}`,
    );
  });
});
