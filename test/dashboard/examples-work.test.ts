import type { LookupFunction } from "node:net";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { LabelUpstreams, UpstreamSpec } from "../../src/config/types.js";
import { networkCatalog } from "../../src/control/dashboard/catalog.js";
import { labelUrls } from "../../src/control/endpoint-urls.js";
import type { Endpoint, HeadCall } from "../../src/registry/types.js";
import { testHostLookup } from "../sdk/resolve.js";
import { DOMAIN, KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { runSnippet } from "../support/run-snippet.js";
import { HEIGHT, NEAR_FINAL_LAG, startNodeFor } from "../support/sdk-nodes.js";
import { needOpenssl, startTlsFront, type TlsFront } from "../support/tls-front.js";

// Everything the dashboard offers as a way to start works: for every network of the registry, its first
// call (method, path and body as the catalog gives them) and its SDK snippet (the registry's `example`, run
// as a customer runs it, `node snippet.mjs`) go through a real gateway to a loopback node of the network's
// interface (test/support/sdk-nodes.ts) and come back with the chain's head.
//
// The gateway sits behind TLS, as a deployment's does, and the URL is the one the dashboard and the key
// e-mail show (src/control/endpoint-urls.ts) with the TLS front's port: some SDKs refuse plain HTTP. Names
// under gw.test resolve to loopback in the snippet's process (test/support/snippet-hosts.mjs).

const catalog = networkCatalog(endpointsByLabel);
/** A cold `node` loading an SDK on a loaded two-core machine; a hanging snippet fails at this deadline. */
const SNIPPET_DEADLINE_MS = 25_000;
/** A height as a snippet prints it: a number, a bigint (`7654321n`) or a hex quantity. */
const printed = (height: number): RegExp =>
  new RegExp(`(^|\\D)(${height}n?|0x${height.toString(16)})(\\D|$)`);

/**
 * The height a snippet prints: the head's, or the final block's for one that asks for it (near-api-js'
 * viewBlock({ finality: "final" }): nearcore's final block is NEAR_FINAL_LAG behind the head).
 */
const printedHeight = (code: string): number =>
  /finality: "final"/.test(code) ? HEIGHT - NEAR_FINAL_LAG : HEIGHT;

/** The value at the head call's field, as its encoding reads it. */
function headOf(answer: unknown, head: HeadCall): number | undefined {
  let value: unknown = answer;
  for (const member of head.field) value = (value as Record<string, unknown> | undefined)?.[member];
  if (typeof value === "number") return value;
  if (typeof value !== "string") return undefined;
  return head.encoding === "hex-quantity" ? Number.parseInt(value, 16) : Number(value);
}

describe.skipIf(needOpenssl().skip)("the dashboard's first calls and SDK snippets, through a gateway", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;
  let front: TlsFront;
  let agent: Agent;
  const url = (label: string) =>
    labelUrls({ secure: true, domain: DOMAIN, port: front.port }, label, KEYS.all).http;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    for (const network of catalog) {
      const endpoint = endpointsByLabel.get(network.firstLabel) as Endpoint;
      // A node per mount: TRON's /jsonrpc and / are two servers of java-tron's
      const byMount: Record<string, (string | UpstreamSpec)[]> = {};
      for (const mount of endpoint.mounts) {
        const { node, upstream } = await startNodeFor(endpoint, mount);
        nodes.push(node);
        byMount[mount.path] = [upstream];
      }
      upstreams[endpoint.label] = endpoint.mounts.length === 1 ? (byMount["/"] ?? []) : byMount;
    }
    gw = await startGateway({ upstreams });
    front = await startTlsFront(DOMAIN, gw.port);
    const lookup: LookupFunction = testHostLookup;
    agent = new Agent({ connect: { lookup, ca: front.ca } });
  });
  afterAll(async () => {
    await agent?.close();
    await front?.close();
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  /** Runs a snippet as a customer would, and expects the chain's head in what it prints. */
  async function printsHead(name: string, code: string): Promise<void> {
    const run = await runSnippet(name, code, {
      domain: DOMAIN,
      caFile: front.caFile,
      deadlineMs: SNIPPET_DEADLINE_MS,
    });
    expect(run, `${code}\n${run.stderr}`).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(printed(printedHeight(code))),
    });
  }

  for (const network of catalog) {
    const endpoint = endpointsByLabel.get(network.firstLabel) as Endpoint;

    it(`${network.code}: the first call answers with the head`, async () => {
      const call = network.firstCall;
      const answer = await request(`${url(endpoint.label).replace(/\/$/, "")}${call.path}`, {
        method: call.method as "GET" | "POST",
        dispatcher: agent,
        ...(call.body === undefined
          ? {}
          : { headers: { "content-type": "application/json" }, body: call.body }),
      });
      const text = await answer.body.text();
      expect({ status: answer.statusCode, text }).toMatchObject({ status: 200 });
      const json = JSON.parse(text) as Record<string, unknown>;
      // JSON-RPC 1.0 servers (Bitcoin Core) write `"error": null` beside a result
      expect(json.error ?? null).toBe(null);
      expect(headOf(json, endpoint.head)).toBe(HEIGHT);
    });

    it(
      `${network.code}: the ${network.example?.sdk} snippet prints the head`,
      () => printsHead(network.code, network.example?.code.replace("{url}", url(endpoint.label)) ?? ""),
      SNIPPET_DEADLINE_MS + 5_000,
    );

    // the dashboard of a gateway on its embedded defaults shows a plain http:// URL, and this form
    const plain = network.example?.http;
    if (plain !== undefined)
      it(
        `${network.code}: the ${network.example?.sdk} snippet for a plain http:// URL prints the head`,
        () => {
          const origin = { secure: false, domain: DOMAIN, port: gw.port };
          return printsHead(
            `${network.code}-http`,
            plain.replace("{url}", labelUrls(origin, endpoint.label, KEYS.all).http),
          );
        },
        SNIPPET_DEADLINE_MS + 5_000,
      );
  }
});
