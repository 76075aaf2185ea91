import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// RFC 9110 §9.1: every general-purpose server supports GET and HEAD; §9.3.2: HEAD is answered as GET, without
// the body. A customer's uptime monitor (`curl -I http://127.0.0.1:8081/v1/networks`, an HTTP check set to
// HEAD) was answered 405 with `Allow: GET`, an answer that contradicts itself, while the dashboard's pages
// beside it took HEAD. The operator API answers HEAD likewise (docs/operations.md).
describe("the self-service API's GET routes answer HEAD", () => {
  let fx: AccountsFixture;

  beforeAll(async () => {
    fx = await startAccounts({});
  });
  afterAll(async () => {
    await fx?.close();
  });

  it("answers HEAD /v1/networks as GET, with no body", async () => {
    const get = await request(`${fx.origin}/v1/networks`);
    await get.body.dump();
    const head = await request(`${fx.origin}/v1/networks`, { method: "HEAD" });
    expect(await head.body.text()).toBe("");
    expect(head.statusCode).toBe(200);
    expect(head.headers["content-type"]).toBe(get.headers["content-type"]);
  });

  it("answers HEAD of a route that needs a session as GET does: 401 without one", async () => {
    const head = await request(`${fx.origin}/v1/keys`, { method: "HEAD" });
    expect(await head.body.text()).toBe("");
    expect(head.statusCode).toBe(401);
  });

  it("names HEAD beside GET in the Allow of a refused method", async () => {
    const answer = await request(`${fx.origin}/v1/networks`, { method: "DELETE" });
    const body = (await answer.body.json()) as { error: { code: string; allow: unknown } };
    expect(answer.statusCode).toBe(405);
    expect(body.error.code).toBe("HTTP_METHOD_NOT_ALLOWED");
    expect(answer.headers.allow).toBe("GET, HEAD");
    expect(body.error.allow).toEqual(["GET", "HEAD"]);
  });

  // HTTP_METHOD_NOT_ALLOWED is a code the self-service API shares with the data plane (docs/errors.md), whose
  // body names the methods as a list (`"allow":["POST"]`): a client reading it here got the string "POST"
  it("names the allowed methods as a list, as the data plane's answer does", async () => {
    const answer = await request(`${fx.origin}/v1/signup`, { method: "GET" });
    const body = (await answer.body.json()) as { error: { allow: unknown } };
    expect(answer.statusCode).toBe(405);
    expect(body.error.allow).toEqual(["POST"]);
  });

  it("still refuses HEAD on a POST route", async () => {
    const answer = await request(`${fx.origin}/v1/signup`, { method: "HEAD" });
    await answer.body.dump();
    expect(answer.statusCode).toBe(405);
    expect(answer.headers.allow).toBe("POST");
  });
});
