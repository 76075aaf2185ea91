import type { LookupFunction } from "node:net";
import { join } from "node:path";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../src/config/defaults.js";
import type { KeyStore } from "../../src/keys/types.js";
import { eventually } from "../support/eventually.js";
import { type RunningGateway, rpcBody, startGateway } from "../support/gateway.js";
import { jsonRpcResponder, type LoopbackNode, startLoopbackNode } from "../support/loopback-node.js";
import { type OutboxMail, outboxMails } from "../support/outbox.js";
import { keyIn, tokenIn } from "../support/smtp.js";
import { type AccountsFixture, startAccounts } from "./helpers.js";

// The key e-mail, read from the outbox folder as a customer without SMTP reads it (.data/outbox with
// `npm start`): it lists the URL of every label the key reaches, with the key in, and each one works as
// written. The dashboard shows the same URLs, from the same place, with a placeholder for the key.

const URL_IN_TEXT = /\b(?:https?|wss?):\/\/[^\s"']+/g;
const ETH_LABELS = ["eth", "eth-holesky", "eth-sepolia"];

/** RFC 6761: every name under `localhost` is the loopback address (curl and browsers resolve them so). */
const localhostLookup: LookupFunction = (hostname, options, callback) => {
  expect(hostname.endsWith(".localhost")).toBe(true);
  if (options.all) callback(null, [{ address: "127.0.0.1", family: 4 }]);
  else callback(null, "127.0.0.1", 4);
};

/** A deployment: the gateway, the control plane that knows where it is, and a loopback eth node. */
interface Deployment {
  readonly fx: AccountsFixture;
  readonly gw: RunningGateway;
  readonly node: LoopbackNode;
  readonly mails: () => OutboxMail[];
}

async function deploy(domain: string): Promise<Deployment> {
  const node = await startLoopbackNode(jsonRpcResponder({ eth_blockNumber: "0x2a" }));
  // The gateway reads the control plane's keys, and the control plane names the gateway's port: the key
  // store is reached through this until both run.
  let fx: AccountsFixture | undefined;
  const keys: KeyStore = { lookup: (digest) => fx?.accounts.keys.lookup(digest) };
  const gw = await startGateway({
    domain,
    keyStore: keys,
    upstreams: Object.fromEntries(ETH_LABELS.map((label) => [label, [node.url]])),
  });
  fx = await startAccounts({}, undefined, "sqlite", {
    domain,
    listen: { host: "127.0.0.1", port: gw.port },
    support: DEFAULT_CONFIG.support,
  });
  const outbox = join(fx.dir, "outbox");
  return { fx, gw, node, mails: () => outboxMails(outbox) };
}

/** Signs up and confirms through the outbox, requests a free test for eth, and returns its key e-mail. */
async function freeTestMail(d: Deployment, email: string): Promise<{ key: string; body: string }> {
  await d.fx.api("POST", "/v1/signup", { email });
  // the confirmation is made and sent after the answer (src/control/accounts/sessions.ts)
  await eventually(() => d.mails().some((m) => m.to === email), 5_000, "the confirmation e-mail");
  const confirmation = d.mails().filter((m) => m.to === email);
  const { json } = await d.fx.api("POST", "/v1/confirm", { token: tokenIn(confirmation[0]?.body ?? "") });
  const test = await d.fx.api("POST", "/v1/free-tests", { network: "eth" }, json.session);
  expect(test.status).toBe(201);
  const body = d.mails().filter((m) => m.to === email)[1]?.body ?? "";
  return { key: keyIn(body), body };
}

async function close(d: Deployment | undefined): Promise<void> {
  await d?.gw.close();
  await d?.fx.close();
  await d?.node.close();
}

describe("the key e-mail, on a local gateway (domain localhost)", () => {
  let d: Deployment;
  let agent: Agent;
  let key = "";
  let body = "";

  beforeAll(async () => {
    d = await deploy("localhost");
    agent = new Agent({ connect: { lookup: localhostLookup } });
    ({ key, body } = await freeTestMail(d, "erin@example.com"));
  });
  afterAll(async () => {
    await agent?.close();
    await close(d);
  });

  it("lists each label the key reaches with its URLs, no placeholder", () => {
    expect(body).not.toMatch(/<label>|\{domain\}|\{label\}|\{key\}/);
    for (const label of ETH_LABELS) expect(body).toContain(`http://${label}.localhost:${d.gw.port}/${key}/`);
    // the registry serves WebSocket on eth
    expect(body).toContain(`ws://eth.localhost:${d.gw.port}/${key}`);
    // a free test has no archive access, and no other network
    expect(body).not.toContain("eth-archive");
    expect(body).not.toMatch(/\/\/(?!eth[.-])[a-z0-9-]+\.localhost/);
  });

  it("every HTTP URL in it works as written", async () => {
    const urls = (body.match(URL_IN_TEXT) ?? []).filter((u) => u.startsWith("http:"));
    expect(urls).toHaveLength(ETH_LABELS.length);
    for (const url of urls) {
      const answer = await request(url, {
        method: "POST",
        dispatcher: agent,
        headers: { "content-type": "application/json" },
        body: rpcBody("eth_blockNumber"),
      });
      expect({ url, status: answer.statusCode, json: await answer.body.json() }).toEqual({
        url,
        status: 200,
        json: { jsonrpc: "2.0", id: 1, result: "0x2a" },
      });
    }
  });

  it("the dashboard shows the same URLs, with the placeholder where the key goes", async () => {
    const { json } = await d.fx.api("GET", "/v1/networks");
    const eth = json.networks.find((n: { code: string }) => n.code === "eth");
    const urls = eth.endpoints.flatMap((e: { http: string; ws?: string }) => [e.http, e.ws ?? []]).flat();
    for (const url of body.match(URL_IN_TEXT) ?? [])
      expect(urls).toContain(url.replace(key, json.keyPlaceholder));
  });

  it("the key is in no log line", () => {
    expect([...d.fx.logs, ...d.gw.logs].filter((line) => line.includes(key))).toEqual([]);
  });
});

describe("the key e-mail, on a real domain", () => {
  let d: Deployment;

  beforeAll(async () => {
    d = await deploy("gw.example");
  });
  afterAll(() => close(d));

  it("says https and wss without a port, and the gateway serves the URL as a TLS front forwards it", async () => {
    const { key, body } = await freeTestMail(d, "frank@example.com");
    expect(body).toContain(`https://eth.gw.example/${key}/`);
    expect(body).toContain(`wss://eth.gw.example/${key}`);
    expect(body).not.toContain(`:${d.gw.port}`);
    // TLS ends in front of the proxies, which get the request with its Host and path unchanged
    const url = new URL(`https://eth.gw.example/${key}/`);
    const answer = await d.gw.call("eth", url.pathname, { host: url.host, body: rpcBody("eth_blockNumber") });
    expect(answer.json).toEqual({ jsonrpc: "2.0", id: 1, result: "0x2a" });
  });
});
