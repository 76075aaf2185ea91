import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import type { GatewayConfig } from "../../config/types.js";
import { packageRoot } from "../../package-root.js";

/**
 * Headers every page and answer of the control plane carries. A strict Content-Security-Policy: scripts,
 * styles and requests from this origin only, no inline script or style, no frames, no plugins; with them, a
 * string that slipped into the page cannot run. The dashboard is served by the control plane only, never by
 * a proxy.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cache-control": "no-store",
};

const TYPES: Readonly<Record<string, string>> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "plans.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
};

/** The dashboard's files, read once: a handful of small files, no build step (src/control/dashboard/assets). */
export class DashboardFiles {
  readonly #files = new Map<string, Buffer>();
  readonly #notFound: Buffer;

  /** `support`: the deployment's contact, in the footer of the page not found as in the dashboard's. */
  constructor(support: GatewayConfig["support"], dir = join(packageRoot(), "src/control/dashboard/assets")) {
    for (const name of Object.keys(TYPES)) this.#files.set(name, readFileSync(join(dir, name)));
    this.#notFound = notFoundPage(support);
  }

  /** Answers GET / and the dashboard's files; false for any other request. */
  serve(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    const name = path === "/" ? "index.html" : path.slice(1);
    const body = this.#files.get(name);
    const type = TYPES[name];
    if (body === undefined || type === undefined) return false;
    res.writeHead(200, { ...SECURITY_HEADERS, "content-type": type, "content-length": body.length });
    res.end(req.method === "HEAD" ? undefined : body);
    return true;
  }

  /**
   * A browser's mistyped address (a GET that accepts HTML, outside the API's /v1/): a page that says so and
   * leads to the dashboard, rather than the API's JSON error. False for any other request.
   */
  notFound(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    if (!(req.headers.accept ?? "").includes("text/html")) return false;
    res.writeHead(404, {
      ...SECURITY_HEADERS,
      "content-type": TYPES["index.html"],
      "content-length": this.#notFound.length,
    });
    res.end(req.method === "HEAD" ? undefined : this.#notFound);
    return true;
  }
}

/** Text for HTML, in an element or a quoted attribute: the contact is the operator's config, not markup. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The page not found, with the footer app.js writes on every other page (its supportLine): this page has no
 * script, so the footer is written here, once, from the same config.
 */
function notFoundPage(support: GatewayConfig["support"]): Buffer {
  const url = escapeHtml(support.dedicatedNodeUrl);
  const email = escapeHtml(support.email);
  return Buffer.from(`<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Node gateway: page not found</title>
  <!-- no icon of its own: without this line every page asks for /favicon.ico and logs its 404 -->
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/app.css">
</head>
<body>
  <header><a class="brand" href="/">Node gateway</a></header>
  <main>
    <h1>Page not found</h1>
    <p>There is no page at this address. <a href="/">Go to the dashboard</a> to sign in, see your keys and
    their usage.</p>
  </main>
  <footer><p>Need a node of your own? <a href="${url}">Order a dedicated node</a>. Questions:
    <a href="mailto:${email}">${email}</a>.</p></footer>
</body>
</html>
`);
}
