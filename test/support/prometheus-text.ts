import { execFileSync } from "node:child_process";

// Reads Prometheus' text exposition format back with Prometheus' own parser: the official Python client's
// `text_string_to_metric_families` (Debian's python3-prometheus-client, installed by scripts/system-packages.sh).
// The parsers on npm (parse-prometheus-text-format, exposition) fold every labelled histogram into one
// unlabelled sample, so the per-label histograms the gateway exports could not be read back through them.

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

const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
families = list(text_string_to_metric_families(sys.stdin.read()))
json.dump({
  "types": {f.name: f.type for f in families},
  "samples": [{"name": s.name, "labels": s.labels, "value": repr(s.value)} for f in families for s in f.samples],
}, sys.stdout)
`;

/** Parses the whole text; throws (with the parser's message) on anything that is not valid exposition. */
export function parseExposition(text: string): Exposition {
  const out = execFileSync("/usr/bin/python3", ["-c", PARSE], { input: text, encoding: "utf8" });
  const parsed = JSON.parse(out) as {
    types: Record<string, string>;
    samples: { name: string; labels: Record<string, string>; value: string }[];
  };
  return {
    types: new Map(Object.entries(parsed.types)),
    samples: parsed.samples.map((s) => ({ ...s, value: Number(s.value.replace("inf", "Infinity")) })),
  };
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
