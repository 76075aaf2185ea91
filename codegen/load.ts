import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { isMap, isPair, isScalar, LineCounter, type Node, parseDocument, visit } from "yaml";
import schema from "../registry/schema.json" with { type: "json" };
import type { RegistrySpec } from "./registry-types.js";

export type YamlPath = readonly (string | number)[];

export interface RegistryIssue {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly message: string;
}

export class RegistryError extends Error {
  readonly issues: readonly RegistryIssue[];
  constructor(issues: readonly RegistryIssue[]) {
    super(issues.map(formatIssue).join("\n"));
    this.name = "RegistryError";
    this.issues = issues;
  }
}

export function formatIssue(issue: RegistryIssue): string {
  return `${issue.file}:${issue.line}:${issue.col} ${issue.message}`;
}

export interface LoadedRegistry {
  readonly spec: RegistrySpec;
  readonly file: string;
  readonly sha256: string;
  /** Where a value sits in the file, for messages that point at the line to fix. */
  readonly locate: (path: YamlPath, message: string) => RegistryIssue;
}

const validateSchema = new Ajv2020({
  allErrors: true,
  strict: true,
  strictRequired: false,
  allowUnionTypes: true,
}).compile(schema);

/** Reads and schema-checks a registry file; throws RegistryError naming file, line and column. */
export function loadRegistry(path: string): LoadedRegistry {
  const text = readFileSync(path, "utf8");
  const file = relative(process.cwd(), path) || path;
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });

  const at = (offset: number, message: string): RegistryIssue => {
    const pos = lineCounter.linePos(offset);
    return { file, line: pos.line, col: pos.col, message };
  };
  if (doc.errors.length > 0) {
    throw new RegistryError(doc.errors.map((e) => at(e.pos[0], `YAML: ${e.message.split("\n")[0]}`)));
  }
  // an alias is resolved only when the document is read as data, where one without its anchor throws with
  // no place: each is found here, at its own line
  const unresolved: RegistryIssue[] = [];
  visit(doc, {
    Alias: (_key, alias) => {
      if (alias.resolve(doc) === undefined)
        unresolved.push(
          at(alias.range?.[0] ?? 0, `YAML: alias "*${alias.source}" names no anchor set before it`),
        );
    },
  });
  if (unresolved.length > 0) throw new RegistryError(unresolved);

  const locate = (path: YamlPath, message: string): RegistryIssue => {
    const node = doc.getIn(path, true) as Node | undefined;
    const offset = node?.range?.[0] ?? nearestOffset(doc.contents as Node | null, path);
    return at(offset, message);
  };

  // the registry is the repository's own file, not untrusted input: an anchor may be aliased any number of
  // times (the library's default guard against alias bombs threw, with no place, at an anchor's hundredth)
  const spec: unknown = doc.toJS({ maxAliasCount: -1 });
  if (!validateSchema(spec)) {
    const issues = (validateSchema.errors ?? []).map((error) => {
      const path = error.instancePath.split("/").slice(1).map(decodePointer);
      const extra = error.params as { additionalProperty?: string; allowedValues?: unknown[] };
      if (extra.additionalProperty !== undefined) {
        return (
          locateKey(doc.getIn(path, true) as Node | undefined, extra.additionalProperty, (offset) =>
            at(
              offset,
              `${describe(path)}: unknown field "${extra.additionalProperty}" (schema: additionalProperties)`,
            ),
          ) ?? locate(path, `${describe(path)}: unknown field "${extra.additionalProperty}"`)
        );
      }
      const allowed = extra.allowedValues ? ` (${extra.allowedValues.join(", ")})` : "";
      return locate(
        path,
        `${describe(path)}: ${error.message ?? "is invalid"}${allowed} (schema: ${error.keyword})`,
      );
    });
    throw new RegistryError(dedupe(issues));
  }
  const sha256 = createHash("sha256").update(text).digest("hex");
  return { spec: spec as unknown as RegistrySpec, file, sha256, locate };
}

function decodePointer(part: string): string | number {
  const text = part.replace(/~1/g, "/").replace(/~0/g, "~");
  return /^\d+$/.test(text) ? Number(text) : text;
}

/** `networks[3].endpoints[0].label`, the path as a reader of the YAML would name it. */
export function describe(path: YamlPath): string {
  let out = "";
  for (const part of path) out += typeof part === "number" ? `[${part}]` : out === "" ? part : `.${part}`;
  return out === "" ? "registry" : out;
}

function locateKey<T>(node: Node | undefined, key: string, found: (offset: number) => T): T | undefined {
  if (!isMap(node)) return undefined;
  for (const item of node.items) {
    if (isPair(item) && isScalar(item.key) && item.key.value === key && item.key.range) {
      return found(item.key.range[0]);
    }
  }
  return undefined;
}

function nearestOffset(root: Node | null, path: YamlPath): number {
  let node: unknown = root;
  let offset = 0;
  for (const part of path) {
    const range = (node as Node | undefined)?.range;
    if (range) offset = range[0];
    node = (node as { get?: (k: unknown, keep: boolean) => unknown } | undefined)?.get?.(part, true);
  }
  return offset;
}

function dedupe(issues: RegistryIssue[]): RegistryIssue[] {
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = formatIssue(issue);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
