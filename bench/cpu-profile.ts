import { readFileSync } from "node:fs";

// Reads a V8 CPU profile (node --cpu-prof) into the functions that spent the most time themselves: what
// docs/performance.md records before and after a change to the request path.

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
  };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface SelfTime {
  /** `name (file:line)`, the file relative to the repository or node_modules. */
  readonly frame: string;
  /** Share of the profile's busy time (idle left out), in percent. */
  readonly percent: number;
}

/** The `count` frames with the most self time, each with its share of the busy time. */
export function topSelfTimes(file: string, count: number): SelfTime[] {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const frames = new Map<number, string>(profile.nodes.map((node) => [node.id, frameOf(node)]));
  const time = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id) ?? "(unknown)";
    if (frame.startsWith("(idle)")) return;
    const delta = profile.timeDeltas[i] ?? 0;
    busy += delta;
    time.set(frame, (time.get(frame) ?? 0) + delta);
  });
  return [...time]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([frame, micros]) => ({ frame, percent: (100 * micros) / busy }));
}

function frameOf({ callFrame }: ProfileNode): string {
  const name = callFrame.functionName === "" ? "(anonymous)" : callFrame.functionName;
  if (callFrame.url === "") return name;
  const url = callFrame.url.replace(/^file:\/\//, "");
  const short = url.includes("node_modules/")
    ? url.slice(url.lastIndexOf("node_modules/") + "node_modules/".length)
    : url.replace(/^.*\/(dist|src)\//, "$1/");
  return `${name} (${short}:${callFrame.lineNumber + 1})`;
}
