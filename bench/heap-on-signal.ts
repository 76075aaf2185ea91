// Loaded into a gateway by the memory scenario (`--expose-gc --import` this file, compiled): at each
// SIGUSR2, two full collections, then the heap's size after them appended as a JSON line to heapFile(pid).
// Not the gateway's code: the bench's probe, as `--cpu-prof` is the profile scenario's.
import { appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where the process `pid` writes its readings. */
export function heapFile(pid: number): string {
  return join(tmpdir(), `gateway-bench-heap-${pid}.jsonl`);
}

const collect = (globalThis as { gc?: () => void }).gc;
if (collect !== undefined)
  process.on("SIGUSR2", () => {
    collect();
    collect();
    const { heapUsed, rss } = process.memoryUsage();
    appendFileSync(heapFile(process.pid), `${JSON.stringify({ heapUsed, rss })}\n`);
  });
