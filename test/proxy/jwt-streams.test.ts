import { generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, DEFAULT_HEALTH, DEFAULT_LIMITS } from "../../src/config/defaults.js";
import type { StaticKey } from "../../src/config/types.js";
import { createLogger } from "../../src/log.js";
import { type RunningProxy, runProxy } from "../../src/proxy/run.js";
import { DOMAIN } from "../support/gateway.js";
import { type HeadsStreamNode, startHeadsStreamNode } from "../support/heads-stream-node.js";

// A stream held over HTTP (Octez's /monitor/heads, which the node keeps open, pushing each head) by a key
// whose settings require a JWT lasts as long as that token does, as a WebSocket opened with one does
// (docs/plans.md, "Key settings"): it is cut when the token expires, and logged JWT_REQUIRED. Before, it
// went on pushing heads to a caller whose token had run out, for as long as it listened.

const ec = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const pem = (key: KeyObject) => key.export({ type: "spki", format: "pem" }).toString();
const KEY: StaticKey = {
  key: "FNjwtStream0000000000000000000",
  networks: "*",
  rate: { perSecond: 1_000, burst: 1_000 },
  settings: { jwtKeys: [{ pem: pem(ec.publicKey) }] },
};

/** An ES256 JWT expiring `exp` seconds from now. */
function jwt(exp: number): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part({ alg: "ES256", typ: "JWT" })}.${part({ sub: "test", exp: Math.floor(Date.now() / 1000) + exp })}`;
  const signature = sign("sha256", Buffer.from(signed), { key: ec.privateKey, dsaEncoding: "ieee-p1363" });
  return `${signed}.${signature.toString("base64url")}`;
}

describe("a stream held with a JWT", () => {
  let node: HeadsStreamNode;
  let proxy: RunningProxy;
  const lines: string[] = [];

  beforeAll(async () => {
    node = await startHeadsStreamNode();
    proxy = await runProxy(
      {
        ...DEFAULT_CONFIG,
        domain: DOMAIN,
        listen: { host: "127.0.0.1", port: 0 },
        operator: undefined,
        keys: [KEY],
        upstreams: { xtz: [node.url] },
        health: { ...DEFAULT_HEALTH, probeIntervalMs: 0 },
        limits: { ...DEFAULT_LIMITS, drainTimeoutMs: 0 },
        log: { level: "info", access: true },
      },
      createLogger("info", (line) => lines.push(line)),
    );
  });
  afterAll(async () => {
    await proxy?.close();
    node?.close();
  });

  it("is cut when the token expires, and logged JWT_REQUIRED", async () => {
    // expired 28 s ago: within the 30 s the gateway allows for clocks that differ, so valid for about 2 s
    const answer = await request(`http://127.0.0.1:${proxy.port}/${KEY.key}/monitor/heads/main`, {
      headers: { host: `xtz.${DOMAIN}`, authorization: `Bearer ${jwt(-28)}` },
    });
    expect(answer.statusCode).toBe(200);
    const ended = new Promise<string>((resolve) => {
      answer.body.on("error", () => resolve("cut"));
      answer.body.on("end", () => resolve("ended"));
      answer.body.resume();
    });
    await expect.poll(() => node.streams.size).toBe(1);
    expect(await ended).toBe("cut");
    // the node's request ends with it
    await expect.poll(() => node.streams.size).toBe(0);
    await expect
      .poll(() => lines.find((line) => line.includes('"error":"JWT_REQUIRED"')))
      .toContain('"status":200');
  });
});
