import { setFlagsFromString } from "node:v8";

/**
 * V8 settings every gateway process runs with. Each entry point (proxy/main.ts, dev/main.ts) imports this
 * module before any other, so the settings hold before the bundle's other modules run, however the process
 * was started (`npm start`, `node dist/gateway.js`, a cluster worker), with no command-line flag to forget.
 *
 * `--no-allocation-site-pretenuring`: V8 watches which allocation sites produce objects that survive
 * scavenges and, past a threshold, allocates that site's objects straight into old space for the rest of
 * the process. Under a proxy's load a request's objects live a few milliseconds, so whether a site crosses
 * the threshold depends on timing: in one process in five (floor and gateway alike, docs/performance.md) it
 * did, and from then on every scavenge promoted about 3 MB, a major GC ran every 0.7 s and the process used
 * 30-50% more CPU per request with 30-50 MB more RSS. With the flag off, none of 25 trial processes and none
 * of eight full bench runs showed that state; without it, 6 of 33 trials and 4 of 6 full runs did.
 */
export const GATEWAY_V8_FLAGS: readonly string[] = ["--no-allocation-site-pretenuring"];

for (const flag of GATEWAY_V8_FLAGS) setFlagsFromString(flag);
