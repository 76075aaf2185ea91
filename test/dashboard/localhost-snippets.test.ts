import { execFile } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointsByLabel } from "../../generated/endpoints.js";
import type { LabelUpstreams } from "../../src/config/types.js";
import { dashboardNetworks } from "../../src/control/dashboard/catalog.js";
import { gatewayOrigin, KEY_PLACEHOLDER } from "../../src/control/endpoint-urls.js";
import type { Endpoint } from "../../src/registry/types.js";
import { ROOT } from "../registry/helpers.js";
import { KEYS, type RunningGateway, startGateway } from "../support/gateway.js";
import type { LoopbackNode } from "../support/loopback-node.js";
import { SNIPPET_DIR } from "../support/run-snippet.js";
import { HEIGHT, startNodeFor } from "../support/sdk-nodes.js";

// With `npm start` (the embedded default, domain `localhost`) the dashboard's SDK snippet is copied and run
// as `node snippet.mjs`, with nothing else: Node does not resolve `eth.localhost` (ENOTFOUND, viem's "fetch
// failed"), so the snippet must make the name resolve itself, as the README's "Using it locally" does.
// Unlike test/dashboard/examples-work.test.ts, no hook resolves names for the snippet's process.

const LABELS = ["eth", "btc", "dot"];
const SNIPPET_DEADLINE_MS = 25_000;

describe("the dashboard's SDK snippets on the embedded default's localhost domain", () => {
  const nodes: LoopbackNode[] = [];
  let gw: RunningGateway;

  beforeAll(async () => {
    const upstreams: Record<string, LabelUpstreams> = {};
    for (const label of LABELS) {
      const endpoint = endpointsByLabel.get(label) as Endpoint;
      const { node, upstream } = await startNodeFor(
        endpoint,
        endpoint.mounts[0] as Endpoint["mounts"][number],
      );
      nodes.push(node);
      upstreams[label] = [upstream];
    }
    gw = await startGateway({ domain: "localhost", upstreams });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  for (const label of LABELS) {
    it(`${label}: run as printed with plain node, it prints the head`, async () => {
      const origin = gatewayOrigin({ domain: "localhost", listen: { port: gw.port } });
      const network = dashboardNetworks(endpointsByLabel, origin).find(
        (n) => n.endpoints[0]?.label === label,
      );
      const code = network?.sdk?.code.replaceAll(KEY_PLACEHOLDER, KEYS.all) ?? "";
      expect(code).toContain(`http://${label}.localhost:${gw.port}/`);
      mkdirSync(SNIPPET_DIR, { recursive: true });
      const file = join(SNIPPET_DIR, `localhost-${label}.mjs`);
      writeFileSync(file, code);
      const run = await new Promise<{ error: Error | null; stdout: string; stderr: string }>((resolve) =>
        execFile(
          process.execPath,
          [file],
          { cwd: ROOT, timeout: SNIPPET_DEADLINE_MS },
          (error, stdout, stderr) => resolve({ error, stdout, stderr }),
        ),
      ).finally(() => rmSync(file, { force: true }));
      expect({ failed: run.error !== null, stdout: run.stdout }, `${code}\n${run.stderr}`).toEqual({
        failed: false,
        stdout: expect.stringMatching(new RegExp(`(^|\\D)(${HEIGHT}n?|0x${HEIGHT.toString(16)})(\\D|$)`)),
      });
    });
  }
});
