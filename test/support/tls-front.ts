import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:tls";
import { skipUnlessCi } from "./services.js";

/**
 * TLS in front of a gateway, as a deployment's load balancer ends it: `https://<label>.<domain>:<port>/`
 * reaches the gateway with its Host and path unchanged. Some SDKs refuse a plain-HTTP URL (Stellar's
 * rpc.Server without allowHttp), so a customer's snippet runs as written only over TLS.
 */
export interface TlsFront {
  readonly port: number;
  /** The self-signed certificate, for NODE_EXTRA_CA_CERTS or an Agent's `ca`. */
  readonly caFile: string;
  readonly ca: string;
  close(): Promise<void>;
}

/** Whether the suites that need a certificate run: openssl makes it (Debian's `openssl` package). */
export function needOpenssl(): { skip: boolean; reason: string } {
  const found = spawnSync("openssl", ["version"]).status === 0;
  return skipUnlessCi(
    found
      ? []
      : [
          {
            suites: "TLS",
            reason: "openssl is not on the PATH (bash scripts/system-packages.sh, as root, installs it)",
          },
        ],
  );
}

export async function startTlsFront(domain: string, gatewayPort: number): Promise<TlsFront> {
  const dir = mkdtempSync(join(tmpdir(), "tls-front-"));
  const keyFile = join(dir, "key.pem");
  const caFile = join(dir, "cert.pem");
  // A certificate for every label at once, valid for a day: the test's own trust anchor, nothing else's.
  execFileSync(
    "openssl",
    [
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
      ["-keyout", keyFile, "-out", caFile, "-days", "1", "-subj", `/CN=${domain}`],
      ["-addext", `subjectAltName=DNS:${domain},DNS:*.${domain}`],
    ].flat(),
    { stdio: "ignore" },
  );
  const ca = readFileSync(caFile, "utf8");
  const sockets = new Set<Socket>();
  const server = createServer({ key: readFileSync(keyFile), cert: ca }, (client) => {
    const gateway = connect(gatewayPort, "127.0.0.1");
    for (const socket of [client, gateway]) {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    }
    client.on("error", () => gateway.destroy());
    gateway.on("error", () => client.destroy());
    client.pipe(gateway).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    caFile,
    ca,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
      }),
  };
}
