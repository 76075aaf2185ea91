import { existsSync, mkdirSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A Linux cgroup with a CPU quota, so a target can be given a fixed share of the machine: a process with
 * 0.5 CPU and a cluster with 2 × 0.5 CPU compare the way one core and two compare on a machine with cores
 * to spare, while the load generator and the node keep what is left. Needs a writable cgroup file system
 * (root, or a delegated subtree); `createCpuBudget` returns undefined where there is none.
 */
export interface CpuBudget {
  /** The command line that starts `argv` inside the group, before it can fork a worker. */
  wrap(argv: readonly string[]): readonly string[];
  /**
   * Lifts the quota (false) or sets it again (true). A process warming up on half a core spends seconds
   * compiling its hot paths on that half, so targets warm up unbudgeted and are measured budgeted.
   */
  enforce(on: boolean): void;
  /** Removes the group once its processes are gone (a cluster's workers exit a moment after it). */
  remove(): Promise<void>;
}

const PERIOD_US = 10_000;
// r+ writes only a file the kernel made: on a plain directory (a tmpfs where no cgroup is mounted) it fails.
const write = (file: string, value: string) => writeFileSync(file, value, { flag: "r+" });

interface Layout {
  readonly root: string;
  /** Sets the quota to `cpus`, or lifts it when undefined. */
  quota(dir: string, cpus: number | undefined): void;
}

const quotaOf = (cpus: number) => String(Math.round(cpus * PERIOD_US));

// cgroup v2 (one tree, cpu.max), then v1 (a tree per controller, cfs_quota_us).
const LAYOUTS: readonly Layout[] = [
  {
    root: "/sys/fs/cgroup",
    quota: (dir, cpus) =>
      write(join(dir, "cpu.max"), `${cpus === undefined ? "max" : quotaOf(cpus)} ${PERIOD_US}`),
  },
  {
    root: "/sys/fs/cgroup/cpu",
    quota: (dir, cpus) => {
      write(join(dir, "cpu.cfs_period_us"), String(PERIOD_US));
      write(join(dir, "cpu.cfs_quota_us"), cpus === undefined ? "-1" : quotaOf(cpus));
    },
  },
];

export function createCpuBudget(name: string, cpus: number): CpuBudget | undefined {
  for (const layout of LAYOUTS) {
    const dir = join(layout.root, `${name}-${process.pid}`);
    try {
      mkdirSync(dir);
    } catch {
      continue;
    }
    try {
      if (!existsSync(join(dir, "cgroup.procs"))) throw new Error("not a cgroup");
      layout.quota(dir, cpus);
    } catch {
      rmdirSync(dir);
      continue;
    }
    return {
      // The shell moves itself into the group and then becomes the target, so the pid is the same and
      // every process the target forks (cluster workers, V8's threads) is in the group from its start.
      wrap: (argv) => ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, ...argv],
      enforce: (on) => layout.quota(dir, on ? cpus : undefined),
      remove: async () => {
        for (let attempt = 0; attempt < 50; attempt++) {
          try {
            rmdirSync(dir);
            return;
          } catch {
            // EBUSY while a process is still in it
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      },
    };
  }
  return undefined;
}
