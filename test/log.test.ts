import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { AccessLine, createLogger } from "../src/log.js";

function lines(
  level: Parameters<typeof createLogger>[0],
  run: (log: ReturnType<typeof createLogger>) => void,
) {
  const out: string[] = [];
  run(createLogger(level, (line) => out.push(line)));
  return out;
}

/** Runs a script with stderr on a file, as in production logging to disk: stderr is synchronous there, so what is lost is ours. */
async function stderrOf(script: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "log-"));
  try {
    const file = join(dir, "stderr.log");
    const fd = openSync(file, "w");
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      stdio: ["ignore", "ignore", fd],
    });
    expect(await new Promise((resolve) => child.once("exit", resolve))).toBe(0);
    closeSync(fd);
    return readFileSync(file, "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The child's stderr through a pipe the test reads only after `lateMs`, so the child finds it full. */
async function stderrThroughPipe(script: string, lateMs: number): Promise<string> {
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const chunks: Buffer[] = [];
  const exited = new Promise((resolve) => child.once("close", resolve));
  await new Promise((resolve) => setTimeout(resolve, lateMs));
  child.stderr.on("data", (chunk: Buffer) => chunks.push(chunk));
  expect(await exited).toBe(0);
  return Buffer.concat(chunks).toString("utf8");
}

describe("the logger", () => {
  it("writes one JSON object per line, fields in order, undefined fields left out", () => {
    const [line] = lines("info", (log) =>
      log.log("info", "request", { label: "eth", key: undefined, status: 200, ms: 3, cached: false }),
    );
    expect(line?.endsWith("}\n")).toBe(true);
    const parsed = JSON.parse(line as string);
    expect(parsed).toEqual({
      t: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      level: "info",
      msg: "request",
      label: "eth",
      status: 200,
      ms: 3,
      cached: false,
    });
    expect(Object.keys(parsed)).toEqual(["t", "level", "msg", "label", "status", "ms", "cached"]);
  });

  it("stamps each line with the wall-clock time, to the millisecond", async () => {
    for (let i = 0; i < 3; i++) {
      const before = Date.now();
      const [line] = lines("info", (log) => log.log("info", "tick"));
      const stamped = Date.parse(JSON.parse(line as string).t);
      expect(stamped).toBeGreaterThanOrEqual(before - 1);
      expect(stamped).toBeLessThanOrEqual(Date.now());
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
  });

  it("stamps the time as toISOString does across milliseconds, seconds, days and a clock set back", () => {
    let now = Date.UTC(2026, 11, 31, 23, 59, 58, 990);
    const clock = vi.spyOn(Date, "now").mockImplementation(() => now);
    try {
      const steps = [0, 1, 3, 7, 999, 1000, 1001, 86_400_000, -5, -1000];
      const out: string[] = [];
      const log = createLogger("info", (line) => out.push(line));
      for (let i = 0; i < 2000; i++) {
        now += steps[i % steps.length] as number;
        log.log("info", "tick");
        expect(JSON.parse(out[out.length - 1] as string).t).toBe(new Date(now).toISOString());
      }
    } finally {
      clock.mockRestore();
    }
  });

  it("escapes what a caller could put in a value, and keeps numbers JSON", () => {
    const [line] = lines("debug", (log) =>
      log.log("warn", 'say "hi"\n', {
        method: 'eth_"x"\\\u0001',
        big: Number.POSITIVE_INFINITY,
        nan: Number.NaN,
      }),
    );
    expect(JSON.parse(line as string)).toMatchObject({
      msg: 'say "hi"\n',
      method: 'eth_"x"\\\u0001',
      big: null,
      nan: null,
    });
  });

  it("writes an access line with the fields that were set, in a fixed order, escaped", () => {
    const access = new AccessLine();
    access.label = "eth";
    access.method = 'eth_"x"';
    access.upstream = "http://node:8545";
    access.status = 200;
    access.ms = 4;
    const [line] = lines("info", (log) => log.log("info", "request", access));
    const parsed = JSON.parse(line as string);
    expect(Object.keys(parsed)).toEqual(["t", "level", "msg", "label", "method", "upstream", "status", "ms"]);
    expect(parsed).toMatchObject({ label: "eth", method: 'eth_"x"', status: 200, ms: 4 });
  });

  it("writes each access line's own values, escaped, however many distinct ones it has seen", () => {
    const written = lines("info", (log) => {
      for (let i = 0; i < 10_000; i++) {
        const access = new AccessLine();
        access.label = `net-${i % 5000}`;
        access.method = i % 2 === 0 ? `m"${i}\\` : "eth_blockNumber";
        access.status = 200;
        log.log("info", "request", access);
      }
    });
    expect(written).toHaveLength(10_000);
    written.forEach((line, i) => {
      expect(JSON.parse(line)).toMatchObject({
        label: `net-${i % 5000}`,
        method: i % 2 === 0 ? `m"${i}\\` : "eth_blockNumber",
      });
    });
  });

  it("gives each line its own level and message when they change within one millisecond", () => {
    const sent = [
      ["info", "request"],
      ["warn", "request"],
      ["warn", "upstream slow"],
      ["info", "request"],
      ["info", 'say "hi"'],
      ["info", "request"],
    ] as const;
    const written = lines("info", (log) => {
      for (const [level, msg] of sent) log.log(level, msg, { n: 1 });
    });
    expect(written.map((line) => JSON.parse(line))).toEqual(
      sent.map(([level, msg]) => ({ t: expect.any(String), level, msg, n: 1 })),
    );
  });

  it("drops lines below its level", () => {
    expect(lines("warn", (log) => log.log("info", "quiet"))).toEqual([]);
    expect(lines("silent", (log) => log.log("error", "quiet"))).toEqual([]);
    expect(lines("warn", (log) => log.log("error", "loud"))).toHaveLength(1);
  });

  it("by default batches lines to stderr and loses none, even when the process exits at once", async () => {
    const script = `
      import { createLogger } from "./src/log.ts";
      const log = createLogger("info");
      for (let i = 0; i < 100000; i++) log.log("info", "line", { i });
      setImmediate(() => { log.log("info", "last"); process.exit(0); });
    `;
    const stderr = await stderrOf(script);
    const written = stderr
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { i?: number; msg: string });
    expect(written).toHaveLength(100001);
    expect(written.slice(0, 100000).every((line, i) => line.i === i)).toBe(true);
    expect(written[100000]?.msg).toBe("last");
  });

  it("keeps every line, in order, when its pipe is full and then drains", async () => {
    const script = `
      import { createLogger } from "./src/log.ts";
      const log = createLogger("info");
      let i = 0;
      const burst = () => {
        for (const end = i + 5000; i < end; i++) log.log("info", "line", { i, pad: "é".repeat(40) });
        if (i < 100000) setImmediate(burst);
      };
      burst();
    `;
    const written = (await stderrThroughPipe(script, 1500))
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { i: number });
    expect(written).toHaveLength(100000);
    expect(written.every((line, i) => line.i === i)).toBe(true);
  });

  it("a line longer than a batch holds goes whole, in its place among the others, multi-byte text intact", async () => {
    const script = `
      import { createLogger } from "./src/log.ts";
      const log = createLogger("info");
      for (let i = 0; i < 300; i++) log.log("info", "line", { i, text: i % 100 === 50 ? "é€😀".repeat(9000) : "é" });
    `;
    const written = (await stderrOf(script))
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { i: number; text: string });
    expect(written.map((line) => line.i)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    for (const line of written) expect(line.text).toBe(line.i % 100 === 50 ? "é€😀".repeat(9000) : "é");
  });

  it("writes a lone line soon, without waiting for more lines or for exit", async () => {
    const script = `
      import { writeSync } from "node:fs";
      import { createLogger } from "./src/log.ts";
      createLogger("info").log("info", "lone");
      setTimeout(() => { writeSync(2, "mark\\n"); process.exit(0); }, 300);
    `;
    const [first, second] = (await stderrOf(script)).trimEnd().split("\n");
    expect(JSON.parse(first as string)).toMatchObject({ msg: "lone" });
    expect(second).toBe("mark");
  });
});
