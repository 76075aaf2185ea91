import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createCpuBudget } from "../../bench/cpu-budget.js";

// Where no cgroup can be made (no root, no delegated subtree) the bench skips its budgeted scaling
// check and says so; there is nothing to test here either.
const probe = createCpuBudget("gateway-test-probe", 0.5);
probe?.remove();

describe.skipIf(probe === undefined)("CPU budget", () => {
  it("starts a process inside a group whose quota is the budget", () => {
    const budget = createCpuBudget("gateway-test", 0.25);
    if (budget === undefined) throw new Error("a cgroup could be made a moment ago");
    try {
      const script = 'process.stdout.write(require("node:fs").readFileSync("/proc/self/cgroup", "utf8"))';
      const [command, ...args] = budget.wrap([process.execPath, "-e", script]) as [string, ...string[]];
      const groups = execFileSync(command, args, { encoding: "utf8" });
      const line = groups.split("\n").find((l) => l.includes(`gateway-test-${process.pid}`));
      expect(line).toBeDefined();
      // cgroup v2 names the group on its "0::" line, v1 on the cpu controller's.
      const path = (line as string).slice((line as string).lastIndexOf(":") + 1);
      const root = line?.startsWith("0::") ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu";
      const quota = line?.startsWith("0::")
        ? readFileSync(`${root}${path}/cpu.max`, "utf8").trim()
        : `${readFileSync(`${root}${path}/cpu.cfs_quota_us`, "utf8").trim()} ${readFileSync(`${root}${path}/cpu.cfs_period_us`, "utf8").trim()}`;
      const [allowed, period] = quota.split(" ").map(Number) as [number, number];
      expect(allowed / period).toBeCloseTo(0.25, 5);
    } finally {
      budget.remove();
    }
  });
});
