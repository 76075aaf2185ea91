// What the proxy needs to know of an account store's address before it opens it: kept apart from
// store/postgres.ts so that a proxy whose store is not PostgreSQL (or that has none) never loads pg, whose
// code held about 5 MB of a proxy's resident memory (docs/performance.md, "What a proxy holds at rest").

/** Whether the account store the config names is PostgreSQL (a URL) rather than a SQLite file (a path). */
export function isPostgresUrl(database: string): boolean {
  return database.startsWith("postgres://") || database.startsWith("postgresql://");
}

const MASK = "***";

/**
 * The URL without its password, for messages and logs: its `user:password@` and a libpq `?password=` (which
 * pg reads into the connection's config as it reads every query parameter) written `***`. Read as pg reads
 * it (WHATWG URL): a password holding an unencoded `@` ends at the last one, and is masked whole.
 */
export function redacted(url: string): string {
  // a SQLite file's path is no URL (`C:\data\gateway.sqlite` would read as one of scheme `c:`)
  if (!isPostgresUrl(url)) return redactedText(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return redactedText(url);
  }
  if (parsed.password !== "") parsed.password = MASK;
  // the query as written but for its password: URLSearchParams would write the rest anew
  parsed.search = maskedQuery(parsed.search);
  return parsed.href;
}

/**
 * `text` (a library's message, a whole error line) without a store URL's password: each PostgreSQL URL in it
 * redacted, any `password=` value masked, and the known `url`'s password masked wherever the text repeats
 * it alone (6 characters or more: a shorter one is a word the text may hold for its own reasons).
 */
export function redactedText(text: string, url?: string): string {
  let masked = text;
  if (url !== undefined) {
    masked = masked.split(url).join(redacted(url));
    for (const password of passwordsOf(url))
      if (password.length >= 6) masked = masked.split(password).join(MASK);
  }
  // greedy to the last `@` before the path or the text's next space, as a URL parser reads the userinfo
  return maskedQuery(masked.replace(/(postgres(?:ql)?:\/\/[^:@/\s]*):[^/\s]*@/g, `$1:${MASK}@`));
}

function maskedQuery(text: string): string {
  return text.replace(/([?&]password=)[^&#\s]*/gi, `$1${MASK}`);
}

/** The password `url` holds, as written and decoded, in its userinfo and its query. */
function passwordsOf(url: string): string[] {
  if (!isPostgresUrl(url)) return [];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const found = [parsed.password, ...parsed.searchParams.getAll("password")];
  for (const param of parsed.search.slice(1).split("&"))
    if (param.toLowerCase().startsWith("password=")) found.push(param.slice("password=".length));
  return [...new Set(found.flatMap((raw) => [raw, decoded(raw)]))].filter((form) => form !== "");
}

function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
