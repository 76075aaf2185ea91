import { type Document, isMap, isNode, isPair, isScalar, isSeq, LineCounter, parseDocument } from "yaml";

export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * A deployment file as parsed YAML that remembers where each value was written, so a problem is reported as
 * `file:line:column: …`: what an operator running `--check-config` before a reload needs to find it.
 */
export class ConfigSource {
  readonly file: string;
  readonly #lines = new LineCounter();
  readonly #doc: Document;

  /** Parses `text`; a YAML syntax error is a ConfigError naming its line. */
  constructor(file: string, text: string) {
    this.file = file;
    this.#doc = parseDocument(text, { lineCounter: this.#lines });
    if (this.#doc.errors.length > 0) {
      throw new ConfigError(
        this.#doc.errors
          // the reader's first line says the place again, then a colon before the code frame it drew
          .map((e) => `${this.#where(e.pos[0])}: ${firstLine(e.message) || e.code}`)
          .join("\n"),
      );
    }
  }

  /**
   * The file's value as plain data. A file with nothing in it (empty, only comments, or `null`) is refused:
   * it is what a config tool that truncated the file, or a failed `envsubst > file`, leaves behind, and
   * reloading it would withdraw every key and node. A deployment of defaults alone writes `{}`.
   */
  value(): unknown {
    const value = this.#doc.toJS();
    if (value === null || value === undefined)
      throw new ConfigError(
        `${this.file}: the file holds no config (it is empty, only comments, or null); write {} for the defaults`,
      );
    return value;
  }

  /**
   * `file:line:column` of the value at `path` (keys and indexes), or of its key `key` below it; the nearest
   * ancestor written in the file when that value is not (a default, or a missing field).
   */
  at(path: readonly (string | number)[], key?: string): string {
    let node: unknown = this.#doc.contents;
    let offset = rangeStart(node);
    for (const step of [...path, ...(key === undefined ? [] : [key])]) {
      if (!isMap(node) && !isSeq(node)) break;
      const pair = isMap(node)
        ? node.items.find((p) => isPair(p) && keyOf(p.key) === String(step))
        : undefined;
      const next = isMap(node) ? pair?.value : node.items[Number(step)];
      if (next === undefined) break;
      // A key named by `key` points at the key itself, the word the operator typed.
      offset = step === key && pair !== undefined ? rangeStart(pair.key) : rangeStart(next);
      node = next;
    }
    return this.#where(offset);
  }

  #where(offset: number | undefined): string {
    if (offset === undefined) return this.file;
    const { line, col } = this.#lines.linePos(offset);
    return `${this.file}:${line}:${col}`;
  }
}

/** A JSON pointer, as ajv says where a value failed (`/upstreams/eth/0`), as the path `at` takes. */
export function pointerPath(pointer: string): string[] {
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function keyOf(key: unknown): string | undefined {
  return isScalar(key) ? String(key.value) : undefined;
}

function rangeStart(node: unknown): number | undefined {
  return isNode(node) ? node.range?.[0] : undefined;
}

/** A YAML error's message without the place its reader appends ("at line 2, column 1:") and its code frame. */
function firstLine(message: string): string {
  return (message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?$/, "");
}
