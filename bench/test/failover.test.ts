import { EventEmitter } from "node:events";
import type { Client } from "autocannon";
import { describe, expect, it } from "vitest";
import { statesOf } from "../operator-watch.js";
import { countRequests, type Tally } from "../phased-load.js";
import { type FailoverRow, markdown } from "../report.js";
import { type Fault, judge } from "../scenarios/failover.js";

const row: FailoverRow = {
  fault: "kill a",
  windowSeconds: 10,
  rpsBefore: 20_000,
  rpsWindow: 19_000,
  failedWindow: 0,
  p99MsBefore: 4,
  p99MsWindow: 5,
  maxMsWindow: 30,
  outMs: 20,
  backMs: 3000,
  failedAfter: 0,
};
const fault = (kind: Fault["kind"]): Fault => ({
  kind,
  name: kind,
  inflict: () => {},
  mend: async (a) => a,
});

describe("failover checks", () => {
  it("allows no failed read after a kill, from the fault until the node is back", () => {
    expect(judge(fault("kill"), row, 50, 2000).map((c) => c.pass)).toEqual([true, true]);
    const [late] = judge(fault("kill"), { ...row, failedAfter: 1 }, 50, 2000);
    expect(late?.pass).toBe(false);
    expect(late?.measured).toBe("1 failed (0 in the 10 s after the fault, 1 once a ran again)");
  });

  it("allows a hung node the calls that can be in flight on it, and no more", () => {
    expect(judge(fault("hang"), { ...row, failedWindow: 50 }, 50, 2000)[0]?.pass).toBe(true);
    expect(judge(fault("hang"), { ...row, failedWindow: 51 }, 50, 2000)[0]?.pass).toBe(false);
  });

  it("wants the node out of rotation within two probe intervals", () => {
    expect(judge(fault("hang"), { ...row, outMs: 4000 }, 50, 2000)[1]?.pass).toBe(true);
    expect(judge(fault("hang"), { ...row, outMs: 4001 }, 50, 2000)[1]?.pass).toBe(false);
    const never = judge(fault("kill"), { ...row, outMs: undefined }, 50, 2000)[1];
    expect([never?.pass, never?.measured]).toEqual([false, "never"]);
  });
});

describe("phased load's count of one connection", () => {
  const counted = (...events: [string, ...unknown[]][]): Tally => {
    const tally: Tally = { answered: 0, failed: 0, lost: 0, latencies: [] };
    const client = new EventEmitter() as Client;
    countRequests(client, () => tally);
    for (const [name, ...args] of events) client.emit(name, ...args);
    return tally;
  };

  it("counts answers, and non-2xx answers as failed", () => {
    expect(counted(["request"], ["response", 200, 40, 1.5], ["request"], ["response", 503, 40, 2])).toEqual({
      answered: 2,
      failed: 1,
      lost: 0,
      latencies: [1.5, 2],
    });
  });

  it("counts a connection error once", () => {
    expect(counted(["request"], ["connError", new Error("ECONNRESET")], ["request"])).toMatchObject({
      failed: 1,
      lost: 0,
    });
  });

  it("counts a request lost with a connection the server closed, which autocannon does not", () => {
    // autocannon makes a new connection and writes the next request: the first was never answered.
    expect(counted(["request"], ["request"], ["response", 200, 40, 1])).toMatchObject({
      answered: 1,
      failed: 1,
      lost: 1,
    });
  });

  it("counts a timeout once, although autocannon writes the next request before reporting it", () => {
    expect(counted(["request"], ["request"], ["timeout"])).toMatchObject({ failed: 1, lost: 0 });
  });
});

describe("the operator API's view", () => {
  it("reads each upstream's state of one label", () => {
    const report = {
      processes: [
        {
          labels: [
            { label: "algo", upstreams: [{ name: "x", state: "failing", lastError: "probe: down" }] },
            {
              label: "eth",
              upstreams: [
                { name: "a", state: "failing", lastError: "refused: ECONNREFUSED" },
                { name: "b", state: "healthy", lastError: null },
              ],
            },
          ],
        },
      ],
    };
    expect([...statesOf(report, "eth")]).toEqual([
      ["a", { state: "failing", lastError: "refused: ECONNREFUSED" }],
      ["b", { state: "healthy", lastError: null }],
    ]);
    expect(statesOf({ processes: [] }, "eth").size).toBe(0);
  });
});

describe("the failover table", () => {
  it("prints its rows with the settings under them", () => {
    const text = markdown({
      rows: [],
      fanout: [],
      failover: [{ rows: [{ ...row, outMs: undefined }], settings: "Health settings: the defaults." }],
      checks: [],
      notes: [],
    });
    expect(text).toContain("| kill a | 10 | 20000 | 19000 | 0 | 4 | 5 | 30 | – | 3000 | 0 |");
    expect(text).toContain("| 0 |\n\nHealth settings: the defaults.");
  });
});
