import type { YamlPath } from "./load.js";
import type { InterfaceSpec, NetworkSpec } from "./registry-types.js";

/** The call whose answer an endpoint's `chainId` is: an EVM node's chain id (test/fixtures/spec-labels.yaml lists the product's). */
const CHAIN_ID_METHOD = "eth_chainId";

/**
 * An endpoint that serves eth_chainId declares the id it answers, unless its network records with
 * `noChainId` why it has none (the product lists none for some networks); one that does not serve the call
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

/**
 * The interfaces of a network's mounts that name their chain in text (registry `chain` without an
 * encoding: a genesis hash, a chain name, a passphrase): each mount asks its first interface that says.
 */
function textChainCalls(network: NetworkSpec, interfaces: Record<string, InterfaceSpec>): string[] {
  return network.mounts.flatMap((mount) => {
    const ids = typeof mount.interface === "string" ? [mount.interface] : mount.interface;
    const first = ids.find((id) => interfaces[id]?.chain !== undefined);
    const call = first === undefined ? undefined : interfaces[first]?.chain;
    return call !== undefined && call.encoding === undefined ? [first as string] : [];
  });
}

/**
 * A chain call with an encoding answers a number, which is compared with an endpoint's chainId: the
 * EVM's eth_chainId (checkChainIds). Any other chain call answers text, compared with `chain`.
 */
export function checkChainCall(
  id: string,
  iface: InterfaceSpec,
  report: (path: YamlPath, message: string) => void,
): void {
  const call = iface.chain;
  if (call?.encoding !== undefined && call.method !== CHAIN_ID_METHOD)
    report(
      ["interfaces", id, "chain", "encoding"],
      `interface "${id}" reads its chain as a number, which only ${CHAIN_ID_METHOD} answers (compared with chainId); name the chain as text instead`,
    );
}

/**
 * An endpoint whose mounts name their chain in text declares the name its nodes answer (`chain`), and one
 * whose mounts do not declares none: the prober compares the two, and a node on another chain gets no
 * call. A name is a chain's: endpoints of one environment share it, an archive shares its mainnet's, and
 * each testnet's differs from the mainnet's.
 */
export function checkChainNames(
  network: NetworkSpec,
  path: YamlPath,
  interfaces: Record<string, InterfaceSpec>,
  report: (path: YamlPath, message: string) => void,
): void {
  const callers = textChainCalls(network, interfaces);
  const hasMainnet = network.endpoints.some((e) => e.environment === "mainnet");
  const chainOf = (environment: string) =>
    environment === "archive" && hasMainnet ? "mainnet" : environment;
  const nameOfChain = new Map<string, { name: string; label: string }>();
  network.endpoints.forEach((endpoint, e) => {
    const at: YamlPath = [...path, "endpoints", e];
    const { label, chain: name } = endpoint;
    if (name === undefined) {
      if (callers.length > 0)
        report(
          at,
          `endpoint "${label}" declares no chain; its interface ${callers[0]} names the chain its nodes are on, so declare the name they answer`,
        );
      return;
    }
    if (callers.length === 0) {
      report(
        [...at, "chain"],
        `endpoint "${label}" declares chain "${name}" but no interface of network ${network.code} names its chain in text`,
      );
      return;
    }
    const chain = chainOf(endpoint.environment);
    const same = nameOfChain.get(chain);
    if (same !== undefined && same.name !== name) {
      report(
        [...at, "chain"],
        `endpoint "${label}" declares chain "${name}" but "${same.label}" of the same chain (${chain}) declares "${same.name}"`,
      );
      return;
    }
    for (const [other, seen] of nameOfChain)
      if (other !== chain && seen.name === name)
        report(
          [...at, "chain"],
          `endpoint "${label}" (${chain}) declares chain "${name}", the chain of "${seen.label}" (${other}); each chain has its own`,
        );
    if (same === undefined) nameOfChain.set(chain, { name, label });
  });
}
