import { describe, expect, it } from "vitest";
import { silentReason } from "../../src/proxy/cluster.js";

// `/readyz` and `GET /upstreams` name a worker that gave no answer. One forked and not yet listening (at the
// start, or in place of one that exited) reads no question before it has its config: the operator reads it
// as starting, not as a worker that went silent, which would send them looking for a hung process.
describe("a worker that gave the primary no answer", () => {
  const worker = { id: 3, process: { pid: 4242 } } as Parameters<typeof silentReason>[0];

  it("is starting while it does not listen yet", () => {
    expect(silentReason(worker, false)).toBe("worker 3 (pid 4242) is starting");
  });

  it("did not answer once it listens", () => {
    expect(silentReason(worker, true)).toMatch(/^worker 3 \(pid 4242\) did not answer within \d+ ms$/);
  });
});
