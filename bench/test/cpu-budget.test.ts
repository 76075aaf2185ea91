import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createCpuBudget } from "../cpu-budget.js";

// Where no cgroup can be made (no root, no delegated subtree) the bench skips its budgeted scaling
// check and says so; there is nothing to test here either.
const probe = createCpuBudget("gateway-test-probe", 0.5);
await probe?.remove();

describe.skipIf(probe === undefined)("CPU budget", () => {
  it("starts a process inside a group whose quota is the budget, and removes the group after it", async () => {
    const budget = createCpuBudget("gateway-test", 0.25);
    if (budget === undefined) throw new Error("a cgroup could be made a moment ago");
    let groupDir = "";
    try {
      const script = 'process.stdout.write(require("node:fs").readFileSync("/proc/self/cgroup", "utf8"))';
      const [command, ...args] = budget.wrap([process.execPath, "-e", script]) as [string, ...string[]];
      const groups = execFileSync(command, args, { encoding: "utf8" });
      const line = groups.split("\n").find((l) => l.includes(`gateway-test-${process.pid}`));
      expect(line).toBeDefined();
      // cgroup v2 names the group on its "0::" line, v1 on the cpu controller's.
      const path = (line as string).slice((line as string).lastIndexOf(":") + 1);
      groupDir = `${line?.startsWith("0::") ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu"}${path}`;
      const read = (file: string) => readFileSync(`${groupDir}/${file}`, "utf8").trim();
      const quota = line?.startsWith("0::")
        ? read("cpu.max")
        : `${read("cpu.cfs_quota_us")} ${read("cpu.cfs_period_us")}`;
      const [allowed, period] = quota.split(" ").map(Number) as [number, number];
      expect(allowed / period).toBeCloseTo(0.25, 5);
    } finally {
      await budget.remove();
    }
    expect(groupDir).not.toBe("");
    expect(existsSync(groupDir)).toBe(false);
  });

  it("lifts the quota for a warm-up and sets it again", async () => {
    const budget = createCpuBudget("gateway-test-lift", 0.5);
    if (budget === undefined) throw new Error("a cgroup could be made a moment ago");
    const dir = ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"]
      .map((root) => `${root}/gateway-test-lift-${process.pid}`)
      .find((candidate) => existsSync(candidate)) as string;
    const quota = () =>
      existsSync(`${dir}/cpu.max`)
        ? readFileSync(`${dir}/cpu.max`, "utf8").split(" ")[0]
        : readFileSync(`${dir}/cpu.cfs_quota_us`, "utf8").trim();
    try {
      expect(quota()).toBe("5000");
      budget.enforce(false);
      expect(["max", "-1"]).toContain(quota());
      budget.enforce(true);
      expect(quota()).toBe("5000");
    } finally {
      await budget.remove();
    }
  });
});
