import { describe, expect, it } from "vitest";
import { type HealthRules, UpstreamHealth, type UpstreamState } from "../../src/upstream/health.js";

const RULES: HealthRules = { takeOut: true, failAfter: 3, recoverAfter: 2 };

function record(rules: HealthRules = RULES) {
  const changes: [UpstreamState, UpstreamState][] = [];
  const health = new UpstreamHealth(rules, (from, to) => changes.push([from, to]));
  return { health, changes };
}

describe("an upstream's health", () => {
  it("a refused connection takes the node out at once; other failures after failAfter in a row", () => {
    const refused = record();
    refused.health.failed("refused", "ECONNREFUSED");
    expect(refused.health.state).toBe("failing");
    expect(refused.health.inRotation).toBe(false);

    const slow = record();
    slow.health.failed("timeout", "no answer");
    slow.health.failed("status", "HTTP 502");
    expect(slow.health.state).toBe("healthy");
    slow.health.succeeded(5); // a success breaks the run
    slow.health.failed("timeout", "no answer");
    slow.health.failed("reset", "ECONNRESET");
    expect(slow.health.state).toBe("healthy");
    slow.health.failed("status", "HTTP 503");
    expect(slow.health.state).toBe("failing");
    expect(slow.changes).toEqual([["healthy", "failing"]]);
    expect(slow.health.report().lastError).toBe("status: HTTP 503");
  });

  it("comes back only after recoverAfter good probes in a row (hysteresis)", () => {
    const { health, changes } = record();
    health.probeFailed("refused", "ECONNREFUSED");
    health.probed(100, 3);
    health.judgeProbe(100, 2);
    expect(health.state).toBe("failing");
    health.probeFailed("timeout", "no answer within 1500 ms"); // the run starts over
    health.probed(101, 3);
    health.judgeProbe(101, 2);
    expect(health.state).toBe("failing");
    health.probed(102, 3);
    health.judgeProbe(102, 2);
    expect(health.state).toBe("healthy");
    expect(changes).toEqual([
      ["healthy", "failing"],
      ["failing", "healthy"],
    ]);
  });

  it("is lagging past maxLag blocks behind the best head, and healthy again after recoverAfter probes within it", () => {
    const { health } = record();
    health.probed(90, 1);
    health.judgeProbe(93, 2);
    expect(health.state).toBe("lagging");
    expect(health.lagBlocks).toBe(3);
    expect(health.inRotation).toBe(false);
    expect(health.usableAsLastResort).toBe(true);
    health.probed(92, 1);
    health.judgeProbe(93, 2);
    expect(health.state).toBe("lagging");
    health.probed(93, 1);
    health.judgeProbe(93, 2);
    expect(health.state).toBe("healthy");
    expect(health.lagBlocks).toBe(0);
  });

  it("cordoned by an operator: out of rotation, never a last resort; uncordoned back to what its probes say", () => {
    const { health, changes } = record();
    health.cordon(true);
    expect(health.state).toBe("cordoned");
    expect(health.inRotation || health.usableAsLastResort).toBe(false);
    health.probeFailed("timeout", "no answer within 1500 ms"); // still probed while cordoned, silently
    health.cordon(false);
    expect(health.state).toBe("failing");
    expect(changes).toEqual([
      ["healthy", "cordoned"],
      ["cordoned", "failing"],
    ]);
  });

  it("without a prober to bring it back, live failures only rank the node (takeOut false)", () => {
    const { health } = record({ ...RULES, takeOut: false });
    for (let i = 0; i < 10; i++) health.failed("refused", "ECONNREFUSED");
    expect(health.state).toBe("healthy");
    expect(health.errorRate).toBe(1);
  });

  it("hedges after its latency plus four deviations, within the bounds; the upper bound before any sample", () => {
    const { health } = record();
    expect(health.hedgeDelay(50, 2000)).toBe(2000);
    for (let i = 0; i < 50; i++) health.succeeded(10);
    expect(health.hedgeDelay(50, 2000)).toBe(50);
    for (let i = 0; i < 50; i++) health.succeeded(i % 2 === 0 ? 100 : 300);
    const delay = health.hedgeDelay(50, 2000);
    expect(delay).toBeGreaterThan(300);
    expect(delay).toBeLessThan(1000);
  });

  it("shows the operator its failed probes: a node that never answered reads an error rate of 1", () => {
    const { health } = record();
    for (let i = 0; i < 3; i++) health.probeFailed("refused", "ECONNREFUSED");
    expect(health.report().errorRate).toBe(1);
    health.probed(100, 5);
    expect(health.report().errorRate).toBe(0.75);
    // its weight reads its live calls alone: back from an outage, it is not held to its failed probes
    expect(health.errorRate).toBe(0);
  });

  it("reports latency quantiles and the error rate over its recent calls", () => {
    const { health } = record({ ...RULES, failAfter: 1000 });
    for (let i = 1; i <= 100; i++) health.succeeded(i);
    for (let i = 0; i < 25; i++) health.failed("status", "HTTP 500");
    const report = health.report();
    expect(report.latencyMs.p50).toBe(51);
    expect(report.latencyMs.p95).toBe(96);
    expect(report.errorRate).toBe(0.25);
  });
});
