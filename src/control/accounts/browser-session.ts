import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { GatewayError } from "../../errors/table.js";

// How the dashboard holds a session: the session token in an HttpOnly, SameSite=Strict cookie that page
// scripts cannot read, and a second, readable cookie whose value each state-changing request repeats in
// X-CSRF-Token (the double-submit pattern; with SameSite=Strict, a defence in depth). API clients send the
// token as `Authorization: Bearer`, which no other site can make a browser send, and need neither.

export const SESSION_COOKIE = "gw_session";
const CSRF_COOKIE = "gw_csrf";
const CSRF_HEADER = "x-csrf-token";
/** The header the dashboard's requests carry: answer with cookies, never with the token in the body. */
const BROWSER_HEADER = "x-gateway-client";

/** Whether a request comes from the dashboard's own script. */
export function fromDashboard(req: IncomingMessage): boolean {
  return req.headers[BROWSER_HEADER] === "dashboard";
}

export function cookiesOf(req: IncomingMessage): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const at = part.indexOf("=");
    if (at > 0) cookies.set(part.slice(0, at).trim(), part.slice(at + 1).trim());
  }
  return cookies;
}

/** The Set-Cookie values that start a dashboard session. */
export function sessionCookies(session: string, maxAgeSeconds: number, secure: boolean): string[] {
  const flags = `Path=/; SameSite=Strict; Max-Age=${Math.floor(maxAgeSeconds)}${secure ? "; Secure" : ""}`;
  const csrf = randomBytes(24).toString("base64url");
  return [`${SESSION_COOKIE}=${session}; HttpOnly; ${flags}`, `${CSRF_COOKIE}=${csrf}; ${flags}`];
}

/** The Set-Cookie values that end it. */
export function clearedCookies(secure: boolean): string[] {
  const flags = `Path=/; SameSite=Strict; Max-Age=0${secure ? "; Secure" : ""}`;
  return [`${SESSION_COOKIE}=; HttpOnly; ${flags}`, `${CSRF_COOKIE}=; ${flags}`];
}

/** A cookie-authenticated state change without the matching X-CSRF-Token is refused: CSRF_REFUSED, 403. */
export function checkCsrf(req: IncomingMessage, cookies: ReadonlyMap<string, string>): void {
  const expected = cookies.get(CSRF_COOKIE) ?? "";
  const sent = req.headers[CSRF_HEADER];
  const given = typeof sent === "string" ? sent : "";
  const same =
    expected.length > 0 &&
    given.length === expected.length &&
    timingSafeEqual(Buffer.from(given), Buffer.from(expected));
  if (!same) throw new GatewayError("CSRF_REFUSED");
}
