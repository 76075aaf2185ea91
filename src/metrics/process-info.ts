import { Counter, Gauge, type Registry } from "prom-client";
import { registryStamp } from "../../generated/endpoints.js";
import { gatewayVersion } from "../embedded.js";

/** Config reloads (SIGHUP) this process made, by outcome: counted where the reload is read. */
const reloads = { success: 0, failure: 0 };

export function reloadCounted(result: "success" | "failure"): void {
  reloads[result] += 1;
}

/**
 * What the gateway is and what was done to its config: `gateway_build_info` (1, with the version, the
 * commit the bundle was built from, `dev` from the sources, and the registry's stamp) and
 * `gateway_config_reloads_total` by result. Registered once per instance: by the process that serves
 * alone, or by a cluster's primary, which reads the config (proxy/cluster.ts), never by its workers.
 */
export function registerProcessInfo(registry: Registry): void {
  const version = gatewayVersion();
  new Gauge({
    name: "gateway_build_info",
    help: "1, labelled with the gateway's version, the commit it was built from and the registry's stamp",
    labelNames: ["version", "commit", "registry"],
    registers: [registry],
    collect() {
      this.set({ version, commit: process.env.GATEWAY_BUILD_COMMIT ?? "dev", registry: registryStamp }, 1);
    },
  });
  new Counter({
    name: "gateway_config_reloads_total",
    help: "Config reloads (SIGHUP): success, or failure when the new config was refused and the old one kept serving",
    labelNames: ["result"],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ result: "success" }, reloads.success);
      this.inc({ result: "failure" }, reloads.failure);
    },
  });
}
