import { writeSync } from "node:fs";

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export type LogFields = Readonly<Record<string, string | number | boolean | undefined>>;

/**
 * The fields of one request's access-log line. A class with every field declared up front, so all the
 * lines share one object shape; a record grown field by field and spread at the end showed in the
 * profile as shape transitions and megamorphic lookups (docs/performance.md).
 */
export class AccessLine {
  label: string | undefined = undefined;
  /** The request's id (X-Request-Id): what a customer quotes, and what finds this line. */
  requestId: string | undefined = undefined;
  /** The key's id, its short non-secret prefix; never the key. */
  key: string | undefined = undefined;
  route: string | undefined = undefined;
  method: string | undefined = undefined;
  batch: number | undefined = undefined;
  /** A batch's methods with their counts (jsonrpc/batch-methods.ts). */
  methods: string | undefined = undefined;
  refused: number | undefined = undefined;
  upstream: string | undefined = undefined;
  /** Upstreams tried (hedges and retries included). */
  attempts: number | undefined = undefined;
  /** The answering upstream's own time, from sending to its answer's last byte. */
  upstreamMs: number | undefined = undefined;
  /** A write's node did not take it (upstream/call-run.ts UpstreamFields): not written in the line. */
  refusedWrite: boolean | undefined = undefined;
  /** The answer at a 5xx is the node's own error (upstream/call-run.ts UpstreamFields): not written in the line. */
  nodesAnswer: boolean | undefined = undefined;
  /** The upstream that answered, as the metrics name it; not written to the log. */
  answeredBy: string | undefined = undefined;
  /** Which tier answered a read of state at a numbered block: `full` or `archive` (src/answers/archive.ts). */
  tier: string | undefined = undefined;
  /**
   * A batch some of whose calls the archive nodes answered: those calls' methods, priced at the archive
   * factor (src/answers/archive.ts); not written to the log.
   */
  archivedMethods: string[] | undefined = undefined;
  /** A batch's calls answered ARCHIVE_REQUIRED (src/answers/archive.ts), which cost nothing; not written to the log. */
  requiredMethods: string[] | undefined = undefined;
  /** Their code, when the archive nodes could not serve them (NO_UPSTREAM, …), else ARCHIVE_REQUIRED; not written to the log. */
  requiredCode: string | undefined = undefined;
  /** What the request cost in compute units (src/plans/compute-units.ts). */
  cu: number | undefined = undefined;
  /** How the answer cache answered: `hit`, `coalesced` (one node answer shared) or `miss` (src/cache/). */
  cache: string | undefined = undefined;
  /** The sub-ranges a range call too wide for one node ran as (src/answers/range-split.ts). */
  parts: number | undefined = undefined;
  /**
   * A batch answered in part from the cache or by identical calls' answers: those calls' methods, priced at
   * the plan's cachedShare (src/cache/batch-cached.ts); not written to the log.
   */
  cachedMethods: string[] | undefined = undefined;
  /** Of those, the calls given an archive node's kept answer, priced at the archive's too; not written to the log. */
  cachedArchivedMethods: string[] | undefined = undefined;
  error: string | undefined = undefined;
  status = 0;
  ms = 0;

  /** The fields as JSON members, each read by name: a loop over names made every read a megamorphic one. */
  members(): string {
    let out = "";
    // an id is new with each request, and only letters, digits and ._:- (http/request-id.ts): no escaping, and
    // kept out of the memo below, which would start over every 4096 requests
    if (this.requestId !== undefined) out += `,"requestId":"${this.requestId}"`;
    if (this.label !== undefined) out += `,"label":${quoted(this.label)}`;
    if (this.key !== undefined) out += `,"key":${quoted(this.key)}`;
    if (this.route !== undefined) out += `,"route":${quoted(this.route)}`;
    if (this.method !== undefined) out += `,"method":${quoted(this.method)}`;
    if (this.batch !== undefined) out += `,"batch":${this.batch}`;
    if (this.methods !== undefined) out += `,"methods":${quoted(this.methods)}`;
    if (this.refused !== undefined) out += `,"refused":${this.refused}`;
    if (this.upstream !== undefined) out += `,"upstream":${quoted(this.upstream)}`;
    if (this.attempts !== undefined) out += `,"attempts":${this.attempts}`;
    if (this.upstreamMs !== undefined) out += `,"upstreamMs":${this.upstreamMs}`;
    if (this.tier !== undefined) out += `,"tier":${quoted(this.tier)}`;
    if (this.cache !== undefined) out += `,"cache":${quoted(this.cache)}`;
    if (this.cu !== undefined) out += `,"cu":${this.cu}`;
    if (this.parts !== undefined) out += `,"parts":${this.parts}`;
    if (this.error !== undefined) out += `,"error":${quoted(this.error)}`;
    return `${out},"status":${this.status},"ms":${this.ms}`;
  }
}

// An access line's strings come from small sets (labels, key ids, allowed methods, upstream names, error
// codes), and a lookup of their JSON text costs a fifth of JSON.stringify. Past QUOTED_SIZE distinct
// strings the memo starts over, so it stays small whatever it is fed.
const QUOTED_SIZE = 4096;
const QUOTED = new Map<string, string>();

function quoted(value: string): string {
  let json = QUOTED.get(value);
  if (json === undefined) {
    json = JSON.stringify(value);
    if (QUOTED.size >= QUOTED_SIZE) QUOTED.clear();
    QUOTED.set(value, json);
  }
  return json;
}

/**
 * JSON lines. Callers pass named fields only, never a request URL or header set, so a key has no way in:
 * a key is identified by its principal's keyId, its short non-secret prefix.
 */
export interface Logger {
  log(level: Exclude<LogLevel, "silent">, msg: string, fields?: LogFields | AccessLine): void;
}

/** `every`: fields every line carries after its message (a cluster worker's `worker`: whose line it is). */
export function createLogger(
  level: LogLevel,
  write: (line: string) => void = stderrLines,
  every: Readonly<Record<string, number | string>> = {},
): Logger {
  const threshold = RANK[level];
  const always = Object.entries(every)
    .map(([name, value]) => `,"${name}":${JSON.stringify(value)}`)
    .join("");
  // The line's opening members, kept while the millisecond, level and message stay the same: under load
  // that is one access line after another.
  let head = "";
  let headStamp = "";
  let headLevel = "";
  let headMsg = "";
  return {
    log(at, msg, fields) {
      if (RANK[at] < threshold) return;
      const stamp = timestamp();
      if (stamp !== headStamp || at !== headLevel || msg !== headMsg) {
        headStamp = stamp;
        headLevel = at;
        headMsg = msg;
        head = `{"t":"${stamp}","level":"${at}","msg":${JSON.stringify(msg)}${always}`;
      }
      // Built by hand: one line per request, and JSON.stringify of a spread object showed in profiles.
      let line = head;
      if (fields instanceof AccessLine) line += fields.members();
      else if (fields !== undefined) {
        for (const name in fields) {
          const value = (fields as LogFields)[name];
          if (value === undefined) continue;
          // names are identifiers written in code; values may carry what a caller sent, so they are escaped
          line += `,"${name}":${typeof value === "number" && Number.isFinite(value) ? value : JSON.stringify(value)}`;
        }
      }
      write(`${line}}\n`);
    },
  };
}

let stampedAt = Number.NaN;
let lastStamp = "";
/** The second being stamped, from its first millisecond, and its ISO text up to the `.`. */
let secondStart = Number.NaN;
let secondText = "";

/**
 * ISO time, one clock read per line, formatted once per second: within it only the milliseconds change.
 * `toISOString` at every new millisecond was 0.4 µs per request at 3,000 requests a second.
 */
function timestamp(): string {
  const now = Date.now();
  if (now === stampedAt) return lastStamp;
  stampedAt = now;
  const ms = now - secondStart;
  if (ms >= 0 && ms < 1000) {
    lastStamp = `${secondText}${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`;
    return lastStamp;
  }
  lastStamp = new Date(now).toISOString();
  secondStart = now - (now % 1000);
  secondText = lastStamp.slice(0, 20);
  return lastStamp;
}

/** The lines waiting to be written, as UTF-8 in one buffer, and how much of it they fill. */
const BATCH_BYTES = 64 * 1024;
let batch = Buffer.allocUnsafeSlow(BATCH_BYTES);
let used = 0;
let flushScheduled = false;
let flushAtExit = false;

/** How long lines wait to be written together, at most. */
const FLUSH_MS = 10;

/**
 * Lines go to stderr together, every FLUSH_MS or 64 KiB, rather than one write per line or per event-loop
 * turn: under load a turn handles one or two requests, and its write of a line or two cost 0.58 µs per
 * request (docs/performance.md). Each line is encoded into the batch's buffer as it is logged, while its
 * pieces are young: joined into one string and encoded at the flush, lines kept for 10 ms had been moved by
 * the garbage collector and cost 0.9 µs each to flatten and encode, 1.3 with the collections they added
 * (docs/performance.md). Whatever is pending at exit is written then; Node writes stderr synchronously to
 * a file, while a full pipe may still drop the tail at exit, as it would for any stderr write. A process
 * killed outright loses at most FLUSH_MS of lines.
 */
function stderrLines(line: string): void {
  // a UTF-16 code unit is at most 3 bytes of UTF-8
  if (line.length * 3 > BATCH_BYTES - used) {
    flushLines();
    if (line.length * 3 > BATCH_BYTES) {
      writeStderr(Buffer.from(line));
      return;
    }
  }
  used += batch.write(line, used);
  if (flushScheduled) return;
  flushScheduled = true;
  setTimeout(flushLines, FLUSH_MS).unref();
  if (flushAtExit) return;
  flushAtExit = true;
  process.once("exit", flushLines);
}

function flushLines(): void {
  flushScheduled = false;
  if (used === 0) return;
  const out = batch.subarray(0, used);
  used = 0;
  // a batch the stream queued is the stream's until written: the next lines get a buffer of their own
  if (!writeStderr(out)) batch = Buffer.allocUnsafeSlow(BATCH_BYTES);
}

/**
 * Writes straight to file descriptor 2 while nothing is queued on `process.stderr`: a stream's write
 * of a string first turns it into a new Buffer, which cost more than the system call (about 0.2 µs per
 * line, docs/performance.md). It is what the stream does anyway: Node writes stderr synchronously to files
 * and terminals, and to a pipe as much as the pipe takes at once, queueing the rest
 * (https://nodejs.org/api/process.html#a-note-on-process-io). What the descriptor does not take (a full
 * pipe's EAGAIN or a short write, EPIPE) goes to the stream, which queues or reports it as it always has,
 * and later batches follow it there until its queue drains, so lines stay in order. True when the
 * descriptor took it all: `out` may be written over then.
 */
function writeStderr(out: Buffer): boolean {
  if (process.stderr.writableLength > 0) {
    process.stderr.write(out);
    return false;
  }
  let written = 0;
  try {
    written = writeSync(2, out);
  } catch {
    // EAGAIN from a full non-blocking pipe, EPIPE, a closed descriptor: the stream's own handling applies.
  }
  if (written === out.length) return true;
  process.stderr.write(out.subarray(written));
  return false;
}
