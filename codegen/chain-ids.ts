import type { YamlPath } from "./load.js";
import type { InterfaceSpec, NetworkSpec } from "./registry-types.js";

/** The call whose answer an endpoint's `chainId` is: an EVM node's chain id (spec §2.5). */
const CHAIN_ID_METHOD = "eth_chainId";

/**
 * An endpoint that serves eth_chainId declares the id it answers, unless its network records with
 * `noChainId` why it has none (spec §2.5 lists none for some networks); one that does not serve the call
 * declares none. An id names a chain: endpoints of one environment share it, an archive shares its
 * mainnet's, and each testnet's differs from the mainnet's and from the other testnets'.
 */
export function checkChainIds(
  network: NetworkSpec,
  path: YamlPath,
  interfaces: Record<string, InterfaceSpec>,
  report: (path: YamlPath, message: string) => void,
): void {
  const serves = network.mounts.some((mount) =>
    (typeof mount.interface === "string" ? [mount.interface] : mount.interface).some((id) =>
      Object.entries(interfaces[id]?.methods ?? {}).some(
        ([group, names]) => group !== "deny" && names.includes(CHAIN_ID_METHOD),
      ),
    ),
  );
  if (network.noChainId !== undefined && !serves)
    report(
      [...path, "noChainId"],
      `network ${network.code} serves no ${CHAIN_ID_METHOD}, so it needs no noChainId; remove it`,
    );
  const hasMainnet = network.endpoints.some((e) => e.environment === "mainnet");
  // The chain an endpoint serves: its environment, with an archive counted as its network's mainnet.
  const chainOf = (environment: string) =>
    environment === "archive" && hasMainnet ? "mainnet" : environment;
  const idOfChain = new Map<string, { id: number; label: string }>();
  network.endpoints.forEach((endpoint, e) => {
    const at: YamlPath = [...path, "endpoints", e];
    const { label, chainId } = endpoint;
    if (chainId === undefined) {
      if (serves && network.noChainId === undefined)
        report(
          at,
          `endpoint "${label}" serves ${CHAIN_ID_METHOD} but declares no chainId; declare it, or say why there is none with noChainId on network ${network.code}`,
        );
      return;
    }
    if (!serves) {
      report(
        [...at, "chainId"],
        `endpoint "${label}" declares chainId ${chainId} but network ${network.code} serves no ${CHAIN_ID_METHOD}`,
      );
      return;
    }
    if (network.noChainId !== undefined) {
      report(
        [...at, "chainId"],
        `endpoint "${label}" declares chainId ${chainId} but network ${network.code} says noChainId`,
      );
      return;
    }
    const chain = chainOf(endpoint.environment);
    const same = idOfChain.get(chain);
    if (same !== undefined && same.id !== chainId) {
      report(
        [...at, "chainId"],
        `endpoint "${label}" declares chainId ${chainId} but "${same.label}" of the same chain (${chain}) declares ${same.id}`,
      );
      return;
    }
    for (const [other, seen] of idOfChain) {
      if (other !== chain && seen.id === chainId)
        report(
          [...at, "chainId"],
          `endpoint "${label}" (${chain}) declares chainId ${chainId}, the id of "${seen.label}" (${other}); each chain has its own id`,
        );
    }
    if (same === undefined) idOfChain.set(chain, { id: chainId, label });
  });
}
