import { BaseSequencer, type TestSpecification } from "vitest/node";

// The order the suite's files start in (vitest.config.ts's sequencer). vitest starts the files it timed in
// an earlier run longest first, from its results cache; a fresh clone (CI) has none, and starts files in
// their glob order, so a file of a minute and more that starts late runs alone at the end on a 2-core
// machine while the other workers idle. The files below, longest first as a loaded 2-core host timed them
// (a whole run, 2026-11-30, later), start first; the rest keep vitest's order.
const SLOW_FIRST = [
  "test/scale/usage-once-after-store-stall.test.ts",
  "test/registry/add-network.test.ts",
  "test/dashboard/examples-work.test.ts",
  "test/dataplane/start.test.ts",
  "test/proxy/workers.test.ts",
  "test/binary/reload.test.ts",
  "test/proxy/worker-stop-stuck.test.ts",
  "test/scale/stores-cut-under-load.test.ts",
  "test/upstream/failover.test.ts",
  "test/scale/multi-instance.test.ts",
];

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const at = SLOW_FIRST.findIndex((path) => file.moduleId.endsWith(`/${path}`));
      return at === -1 ? SLOW_FIRST.length : at;
    };
    // Array.prototype.sort is stable: the files not listed keep the order vitest gave them
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
