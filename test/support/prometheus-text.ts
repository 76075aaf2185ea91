import { execFileSync } from "node:child_process";
import { skipUnlessCi } from "./services.js";

// Reads Prometheus' text exposition format back with Prometheus' own parser: the official Python client's
// `text_string_to_metric_families` (Debian's python3-prometheus-client; `scripts/system-packages.sh` installs
// it, as root, once per machine: `npm test` installs nothing). The parsers on npm (parse-prometheus-text-format,
// exposition) fold every labelled histogram into one unlabelled sample, so the per-label histograms the gateway
// exports could not be read back through them.
//
// Without that parser, the metrics format suite (test/observability/metrics.test.ts) is skipped with its reason,
// and fails under CI, as the suites that need PostgreSQL or Redis do (services.ts). The suites that only read a
// few values off /metrics still run there: `parseExposition` reads the samples with a plain line reader instead,
// which checks nothing of the format. Under CI, where the parser must be, every scrape goes through it.

export interface Sample {
  /** The series name as written: `x_bucket`, `x_sum` and `x_count` for a histogram's parts. */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly samples: readonly Sample[];
  /** Each family's declared type, by family name (a counter's family name drops its `_total`). */
  readonly types: ReadonlyMap<string, string>;
}

const PYTHON = "/usr/bin/python3";

const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
families = list(text_string_to_metric_families(sys.stdin.read()))
json.dump({
  "types": {f.name: f.type for f in families},
  "samples": [{"name": s.name, "labels": s.labels, "value": repr(s.value)} for f in families for s in f.samples],
}, sys.stdout)
`;

let parserProblem: string | null | undefined;

/** Why Prometheus' parser cannot be run here; undefined when it can. Asked once per process. */
function prometheusParserProblem(): string | undefined {
  if (parserProblem === undefined) {
    try {
      execFileSync(PYTHON, ["-c", "import prometheus_client.parser"], { stdio: "pipe" });
      parserProblem = null;
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
      parserProblem = `${missing ? `${PYTHON} is missing` : `${PYTHON} cannot import prometheus_client`}; install it once, as root, with \`bash scripts/system-packages.sh\` (Debian's python3-prometheus-client)`;
    }
  }
  return parserProblem ?? undefined;
}

/** Whether the metrics format suite runs: Prometheus' parser is there (under CI it must be). */
export function needPrometheusParser(): { skip: boolean; reason: string } {
  const problem = prometheusParserProblem();
  return skipUnlessCi(problem === undefined ? [] : [{ suites: "metrics format", reason: problem }]);
}

/**
 * Parses the whole text with Prometheus' parser; throws (with the parser's message) on anything that is not
 * valid exposition. Where the parser is missing (never under CI), reads the samples line by line instead.
 */
export function parseExposition(text: string): Exposition {
  if (prometheusParserProblem() !== undefined && process.env.CI !== "true") return readSamples(text);
  const out = execFileSync(PYTHON, ["-c", PARSE], { input: text, encoding: "utf8" });
  const parsed = JSON.parse(out) as {
    types: Record<string, string>;
    samples: { name: string; labels: Record<string, string>; value: string }[];
  };
  return {
    types: new Map(Object.entries(parsed.types)),
    samples: parsed.samples.map((s) => ({ ...s, value: Number(s.value.replace("inf", "Infinity")) })),
  };
}

/** `name{a="x",b="y"} value`, and `# TYPE name type`: the samples and types, with no check of the rest. */
function readSamples(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type !== null) types.set((type[1] as string).replace(/_total$/, ""), type[2] as string);
    const sample = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (sample === null) continue;
    const labels: Record<string, string> = {};
    for (const [, name, value] of (sample[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[name as string] = (value as string).replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    const value = (sample[3] as string).replace(/^\+?Inf$/, "Infinity").replace(/^-Inf$/, "-Infinity");
    samples.push({ name: sample[1] as string, labels, value: Number(value) });
  }
  return { types, samples };
}

/** The value of the one series with this name whose labels include these; 0 when there is none yet. */
export function seriesValue(
  exposition: Exposition,
  name: string,
  labels: Record<string, string> = {},
): number {
  const matching = exposition.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (matching.length > 1)
    throw new Error(`${matching.length} series of ${name} match ${JSON.stringify(labels)}`);
  return matching[0]?.value ?? 0;
}
