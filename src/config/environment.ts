import { availableParallelism } from "node:os";
import type { ConfigSource } from "./source.js";
import type { UpstreamSpec } from "./types.js";
import { upstreamName } from "./upstream-name.js";

// The environment's part of the deployment config. Each variable is turned into the value the file would
// hold at its place, and written over the file's data before the schema checks it: a variable is checked
// as strictly as the file, fills in a section the file leaves incomplete (GATEWAY_SHARED_LIMITS_REDIS in
// a file's sharedLimits), and a problem with its value names the variable rather than a line of the file.

export type ConfigPath = readonly (string | number)[];

/** One setting a variable makes: where it goes in the config, and its value as the file would hold it. */
export interface Setting {
  readonly variable: string;
  readonly path: ConfigPath;
  readonly value: unknown;
}

const UPSTREAM_PREFIX = "GATEWAY_UPSTREAM_";
const ACCOUNT_VARIABLES = [
  "GATEWAY_ACCOUNTS_DB",
  "GATEWAY_ACCOUNTS_HOST",
  "GATEWAY_ACCOUNTS_PORT",
  "GATEWAY_OUTBOX",
  "GATEWAY_PUBLIC_URL",
  "GATEWAY_SMTP_URL",
] as const;

/** The settings `env` makes over the file's data `file`, and the variables that cannot be read at all. */
export function environmentSettings(
  env: NodeJS.ProcessEnv,
  file: unknown,
): { settings: Setting[]; problems: string[] } {
  const settings: Setting[] = [];
  const problems: string[] = [];
  // An empty variable counts as unset: `GATEWAY_PORT= cmd` does not mean port 0.
  const set = (variable: string, path: ConfigPath, value: (text: string) => unknown = (text) => text) => {
    const text = env[variable];
    if (text !== undefined && text !== "") settings.push({ variable, path, value: value(text) });
  };
  for (const variable of Object.keys(env).sort()) {
    if (!variable.startsWith(UPSTREAM_PREFIX)) continue;
    const label = variable.slice(UPSTREAM_PREFIX.length).toLowerCase().replace(/_/g, "-");
    set(variable, ["upstreams", label], (text) => toldApart(text.split(",").map((url) => url.trim())));
  }
  set("GATEWAY_DOMAIN", ["domain"]);
  set("GATEWAY_HOST", ["listen", "host"]);
  set("GATEWAY_PORT", ["listen", "port"], numeric);
  set("GATEWAY_LOG_LEVEL", ["log", "level"]);
  set("GATEWAY_WORKERS", ["workers"], (text) => (text === "auto" ? availableParallelism() : numeric(text)));
  set("GATEWAY_SHARED_LIMITS_REDIS", ["sharedLimits", "redis"]);
  set("GATEWAY_TRACING_ENDPOINT", ["tracing", "endpoint"]);
  // `operator: null` turns the operator API off; a port for it does not turn it back on.
  if (!isRecord(file) || file.operator !== null) {
    set("GATEWAY_OPERATOR_HOST", ["operator", "listen", "host"]);
    set("GATEWAY_OPERATOR_PORT", ["operator", "listen", "port"], numeric);
  }
  // The account variables fill in a file's accounts section. They make none where the file has none (its
  // other members have no defaults), and are refused there rather than ignored: an operator who set the
  // store's URL expects the process to use it.
  if (isRecord(file) && file.accounts === undefined) {
    for (const variable of ACCOUNT_VARIABLES)
      if (env[variable] !== undefined && env[variable] !== "")
        problems.push(`${variable}: the deployment config has no accounts section for it to fill in`);
  } else if (isRecord(file) && isRecord(file.accounts)) {
    set("GATEWAY_ACCOUNTS_DB", ["accounts", "database"]);
    set("GATEWAY_ACCOUNTS_HOST", ["accounts", "listen", "host"]);
    set("GATEWAY_ACCOUNTS_PORT", ["accounts", "listen", "port"], numeric);
    set("GATEWAY_OUTBOX", ["accounts", "mail", "outbox"]);
    set("GATEWAY_PUBLIC_URL", ["accounts", "publicUrl"]);
    const smtp = env.GATEWAY_SMTP_URL;
    if (smtp !== undefined && smtp !== "") {
      const server = smtpServer(smtp);
      if (server === undefined)
        // Never the value: it holds the SMTP password.
        problems.push("GATEWAY_SMTP_URL: must be smtp://[user:pass@]host[:port] or smtps://…");
      else settings.push({ variable: "GATEWAY_SMTP_URL", path: ["accounts", "mail", "smtp"], value: server });
    }
  }
  return { settings, problems };
}

/** The file's data with the settings written over it; neither is changed. */
export function withSettings(file: unknown, settings: readonly Setting[]): unknown {
  // A file that is not a map is refused by the schema as it is.
  if (!isRecord(file)) return file;
  const merged = structuredClone(file);
  for (const setting of settings) place(merged, setting);
  return merged;
}

function place(config: Record<string, unknown>, { path, value }: Setting): void {
  let node = config;
  for (const step of path.slice(0, -1)) {
    const next = node[step] ?? {};
    // A section the file wrote as something other than a map stays as written: the schema reports it at
    // its line, which a setting placed inside it would hide.
    if (!isRecord(next)) return;
    node[step] = next;
    node = next;
  }
  node[String(path[path.length - 1])] = value;
}

/**
 * Where a value of the merged config came from, for a problem's message: the variable that set it or a
 * value around it, or that made the section it is in; else `file:line:column` in the file (`key` as
 * ConfigSource.at takes it).
 */
export function origin(
  source: ConfigSource,
  file: unknown,
  settings: readonly Setting[],
): (path: ConfigPath, key?: string) => string {
  return (path, key) => {
    const full = key === undefined ? path : [...path, key];
    const startsWith = (whole: ConfigPath, part: ConfigPath) =>
      part.length <= whole.length && part.every((step, i) => String(step) === String(whole[i]));
    const setting =
      settings.find((s) => startsWith(full, s.path)) ??
      (has(file, path) ? undefined : settings.find((s) => startsWith(s.path, path)));
    return setting?.variable ?? source.at(path, key);
  };
}

/** Whether the file's data holds a value at `path`. */
function has(data: unknown, path: ConfigPath): boolean {
  let node = data;
  for (const step of path) {
    if (typeof node !== "object" || node === null || !(String(step) in node)) return false;
    node = (node as Record<string, unknown>)[String(step)];
  }
  return true;
}

/** A number where the text is one, else the text, which the schema then refuses as not a number. */
function numeric(text: string): number | string {
  return /^\s*-?\d+(\.\d+)?\s*$/.test(text) ? Number(text) : text;
}

/** `accounts.mail.smtp` from smtp://user:pass@host:port (smtps:// for implicit TLS), or undefined. */
function smtpServer(text: string): Record<string, unknown> | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const secure = url.protocol === "smtps:";
  if ((url.protocol !== "smtp:" && !secure) || url.hostname === "") return undefined;
  const server = {
    host: url.hostname,
    port: url.port === "" ? (secure ? 465 : 587) : Number(url.port),
    secure,
  };
  if (url.username === "") return server;
  try {
    return { ...server, user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) };
  } catch {
    return undefined; // a stray % in the user name or password
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A variable's URLs, with those that would share a name (two keys of one provider: one origin, and paths
 * that differ only in the masked key) named by their place among them (`…/v2/key-1`, `…/v2/key-2`), as a file would name them: a
 * variable has no other way to. The rest stay plain URLs; one that is not a URL is refused later, by
 * the schema.
 */
function toldApart(urls: readonly string[]): (string | UpstreamSpec)[] {
  const names = urls.map((url) => {
    try {
      return upstreamName(url);
    } catch {
      return undefined;
    }
  });
  const seen = new Map<string, number>();
  return urls.map((url, i) => {
    const name = names[i];
    if (name === undefined || names.indexOf(name) === names.lastIndexOf(name)) return url;
    const place = (seen.get(name) ?? 0) + 1;
    seen.set(name, place);
    // a name the file could hold (letters, digits, `._:/-`): the masked key is `key-<n>`
    const named = `${name.replaceAll("…", `key-${place}`)}`.replace(/[^A-Za-z0-9._:/-]/g, "-");
    return { url, name: named.includes(`key-${place}`) ? named : `${named}-${place}` };
  });
}
