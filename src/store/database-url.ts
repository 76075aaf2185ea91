// What the proxy needs to know of an account store's address before it opens it: kept apart from
// store/postgres.ts so that a proxy whose store is not PostgreSQL (or that has none) never loads pg, whose
// code held about 5 MB of a proxy's resident memory (docs/performance.md, "What a proxy holds at rest").

/** Whether the account store the config names is PostgreSQL (a URL) rather than a SQLite file (a path). */
export function isPostgresUrl(database: string): boolean {
  return database.startsWith("postgres://") || database.startsWith("postgresql://");
}

/** The URL without its password, for messages and logs. */
export function redacted(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
}
