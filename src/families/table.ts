import type { FamilyName } from "../registry/types.js";
import type { Family, FamilySettings } from "./family.js";
import { jsonRpcFamily } from "./jsonrpc.js";
import { mixedFamily } from "./mixed.js";
import { restFamily } from "./rest.js";

/**
 * The family handlers, by the registry family of a mount (InterfacePolicy.family). A new family is one
 * more module that implements `Family` and one more row here, with its name in the registry's schema.
 */
export function familyTable(settings: FamilySettings): Readonly<Record<FamilyName, Family>> {
  return {
    jsonrpc: jsonRpcFamily(settings),
    rest: restFamily(settings),
    mixed: mixedFamily(settings),
  };
}
