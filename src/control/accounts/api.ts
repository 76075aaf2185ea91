import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { preflight, sendError, sendJson } from "../../errors/respond.js";
import { GatewayError } from "../../errors/table.js";
import { mediaType, readBody } from "../../http/body.js";
import { clientAddress, TrustedProxies } from "../../http/client-address.js";
import type { Logger } from "../../log.js";
import { type DashboardFiles, SECURITY_HEADERS } from "../dashboard/serve.js";
import {
  checkCsrf,
  clearedCookies,
  cookiesOf,
  fromDashboard,
  SESSION_COOKIE,
  sessionCookies,
} from "./browser-session.js";
import type { AccountService } from "./service.js";
import type { Account } from "./types.js";

type Handler = (input: {
  body: Record<string, unknown>;
  account: () => Promise<Account>;
  ip: string;
  params: readonly string[];
  query: URLSearchParams;
  /** The session token the request carries, if any, once a cookie's has passed the CSRF check (checkedToken). */
  checkedToken: () => string | undefined;
  /** Answers a dashboard request with a session in cookies rather than in the body. */
  session: (answer: { account: Account; session: string }) => Reply;
}) => Promise<Reply> | Reply;

/** Status, body, and headers such as Set-Cookie. */
type Reply = [number, unknown, Readonly<Record<string, string[] | string>>?];

interface Route {
  readonly method: string;
  readonly pattern: RegExp;
  readonly handler: Handler;
}

const MAX_BODY = 16 * 1024;

/** What the dashboard needs besides the API: its files, the registry's networks and where the gateway is. */
export interface DashboardOptions {
  readonly files: DashboardFiles;
  /** GET /v1/networks: the registry's networks, the gateway's URL templates, the support contact. */
  readonly catalog: unknown;
  /** Whether cookies are marked Secure: the dashboard is reached over TLS. */
  readonly secure: boolean;
  readonly sessionSeconds: number;
}

/**
 * The self-service API, on its own listener apart from the node endpoints (docs/accounts.md):
 * sign up, confirm, sign in, order a node or a free test, list, rotate and revoke keys; and the customer
 * dashboard that uses it (src/control/dashboard/), at `/`.
 */
export function createAccountsApi(
  service: AccountService,
  trustedProxies: readonly string[],
  logger: Logger,
  dashboard: DashboardOptions,
): Server {
  // compiled once: every request of the API asks it for its client's address
  const proxies = new TrustedProxies(trustedProxies);
  const routes: Route[] = [
    route("POST", /^\/v1\/signup$/, async ({ body, ip }) => {
      // the same answer whether or not the address has an account: the e-mail says which
      const email = await service.sessions.signUp(body.email, ip);
      return [
        202,
        {
          email,
          next: "Follow the e-mail sent to this address: a confirmation token for POST /v1/confirm, or, for an address that has an account, a sign-in token for POST /v1/session",
        },
      ];
    }),
    route("POST", /^\/v1\/confirm$/, async ({ body, session }) =>
      session(await service.sessions.confirm(body.token)),
    ),
    route("POST", /^\/v1\/login$/, async ({ body, ip }) => {
      await service.sessions.requestLogin(body.email, ip);
      return [
        202,
        { next: "If the address has an active account, a sign-in token was sent to it: POST /v1/session" },
      ];
    }),
    route("POST", /^\/v1\/session$/, async ({ body, session }) =>
      session(await service.sessions.start(body.token)),
    ),
    // Whatever the session's account's status or the session's age: a suspended account's session must
    // not come back when it is reactivated, nor an expired session's cookies stay in a shared browser.
    route("POST", /^\/v1\/logout$/, async ({ checkedToken }) => {
      await service.sessions.end(checkedToken());
      return [200, { signedOut: true }, { "set-cookie": clearedCookies(dashboard.secure) }];
    }),
    route("GET", /^\/v1\/networks$/, () => [200, dashboard.catalog]),
    route("GET", /^\/v1\/account$/, async ({ account }) => [
      200,
      { account: publicAccount(await account()) },
    ]),
    route("POST", /^\/v1\/free-tests$/, async ({ body, account, ip }) => [
      201,
      {
        key: await service.keys.requestFreeTest(await account(), body.network, ip),
        delivery: "The key was sent to your e-mail",
      },
    ]),
    route("POST", /^\/v1\/orders$/, async ({ body, account }) => [
      201,
      {
        key: await service.keys.order(await account(), body.network, body.plan),
        delivery: "The key was sent to your e-mail",
      },
    ]),
    route("GET", /^\/v1\/keys$/, async ({ account }) => [
      200,
      { keys: await service.keys.list(await account()) },
    ]),
    route("POST", /^\/v1\/keys\/(\d{1,15})\/rotate$/, async ({ account, params }) => [
      201,
      {
        key: await service.keys.rotate(await account(), params[0]),
        delivery: "The new key was sent to your e-mail",
      },
    ]),
    route("POST", /^\/v1\/keys\/(\d{1,15})\/revoke$/, async ({ account, params }) => [
      200,
      { key: await service.keys.revoke(await account(), params[0]) },
    ]),
    route("PUT", /^\/v1\/keys\/(\d{1,15})\/settings$/, async ({ account, params, body }) => [
      200,
      { key: await service.keys.updateSettings(await account(), params[0], body) },
    ]),
    route("GET", /^\/v1\/keys\/(\d{1,15})\/usage$/, async ({ account, params, query }) => [
      200,
      await service.usage.ofKey(
        await account(),
        params[0],
        query.get("from") ?? undefined,
        query.get("to") ?? undefined,
      ),
    ]),
    route("GET", /^\/v1\/overview$/, async ({ account }) => [
      200,
      await service.usage.overview(await account()),
    ]),
    route("GET", /^\/v1\/usage$/, async ({ account, query }) => [
      200,
      await service.usage.ofAccount(
        await account(),
        query.get("from") ?? undefined,
        query.get("to") ?? undefined,
      ),
    ]),
  ];

  return createServer({ requestTimeout: 30_000, headersTimeout: 10_000 }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger.log("error", "accounts api", { error: String(error) });
      sendError(res, new GatewayError("INTERNAL"), "rest");
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const [path = "/", search = ""] = (req.url ?? "/").split("?", 2);
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    if (
      !path.startsWith("/v1/") &&
      (dashboard.files.serve(req, res, path) || dashboard.files.notFound(req, res))
    )
      return;
    try {
      const candidates = routes.filter((r) => r.pattern.test(path));
      // the methods as a list, as the data plane and the operator API name them; the header joins them
      const allow = (candidates.length === 0 ? routes : candidates).flatMap((r) =>
        r.method === "GET" ? ["GET", "HEAD"] : [r.method],
      );
      // Any origin may read the API's answers (sendJson): a customer's own web app signs in and manages
      // keys with a bearer session. Its JSON bodies and Authorization header make the browser ask first (a
      // CORS preflight, Fetch standard §4.8); refused, the page got "Failed to fetch" for every such call.
      // Granted for the route's methods only, and for an unknown path with every method, so that the page
      // reads its API_ROUTE_NOT_FOUND. No credentials are allowed: a cookie session never rides a call from
      // another origin.
      if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
        preflight(res, req.headers["access-control-request-headers"], [...new Set(allow)].join(", "));
        return;
      }
      if (candidates.length === 0) throw new GatewayError("API_ROUTE_NOT_FOUND");
      // HEAD is answered as GET, without the body, as every HTTP server must (RFC 9110, 9.1 and 9.3.2): a
      // monitor's `curl -I`. Node's ServerResponse sends no body to a HEAD request.
      const method = req.method === "HEAD" ? "GET" : req.method;
      const match = candidates.find((r) => r.method === method);
      if (match === undefined)
        throw new GatewayError("HTTP_METHOD_NOT_ALLOWED", { allow }, { allow: allow.join(", ") });
      const params = (match.pattern.exec(path) ?? []).slice(1);
      const changes = req.method === "POST" || req.method === "PUT";
      const body = changes ? await jsonBody(req) : {};
      // the scheme is case-insensitive, and one or more spaces part it from the token (RFC 9110 §11.4)
      const bearer = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
      const cookies = cookiesOf(req);
      const token = bearer ?? cookies.get(SESSION_COOKIE);
      const checkedToken = () => {
        // A session carried by the browser's cookie is ambient: a state change must prove it is ours. A
        // request with no session at all has nothing to forge: it is told to sign in (SESSION_REQUIRED).
        if (bearer === undefined && changes && token !== undefined) checkCsrf(req, cookies);
        return token;
      };
      const [status, answer, headers] = await match.handler({
        body,
        params,
        ip: clientAddress(req, proxies),
        query: new URLSearchParams(search),
        checkedToken,
        account: async () => service.sessions.authenticate(checkedToken()),
        session: ({ account, session }) =>
          fromDashboard(req)
            ? [
                200,
                { account: publicAccount(account) },
                { "set-cookie": sessionCookies(session, dashboard.sessionSeconds, dashboard.secure) },
              ]
            : [200, { account: publicAccount(account), session }],
      });
      for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
      sendJson(res, status, JSON.stringify(answer));
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      sendError(res, error, "rest");
    }
  }
}

function route(method: string, pattern: RegExp, handler: Handler): Route {
  return { method, pattern, handler };
}

async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const text = (await readBody(req, MAX_BODY)).toString("utf8");
  // Actions on a key (rotate, revoke) carry no body at all.
  if (text === "") return {};
  if (mediaType(req.headers["content-type"]) !== "application/json")
    throw new GatewayError("UNSUPPORTED_MEDIA_TYPE");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new GatewayError("PARSE_ERROR");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new GatewayError("INVALID_FIELD", { reason: "send a JSON object" });
  return value as Record<string, unknown>;
}

function publicAccount(account: Account): Record<string, unknown> {
  return {
    id: account.id,
    email: account.email,
    status: account.status,
    createdAt: new Date(account.createdAt).toISOString(),
  };
}
