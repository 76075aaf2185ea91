export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export type LogFields = Readonly<Record<string, string | number | boolean | undefined>>;

/**
 * JSON lines. Callers pass named fields only, never a request URL or header set, so a key has no way in:
 * a key is identified by its principal's keyId, its short non-secret prefix.
 */
export interface Logger {
  log(level: Exclude<LogLevel, "silent">, msg: string, fields?: LogFields): void;
}

export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const threshold = RANK[level];
  return {
    log(at, msg, fields) {
      if (RANK[at] < threshold) return;
      write(`${JSON.stringify({ t: new Date().toISOString(), level: at, msg, ...fields })}\n`);
    },
  };
}
