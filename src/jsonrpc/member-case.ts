import type { InterfacePolicy } from "../registry/types.js";

// Go's encoding/json (geth, Erigon, the nodes of most EVM networks) matches an object's member names without
// regard to case (Unicode's simple folding), and of two names it takes for one, the last. The gateway reads
// some members of a call's params by their names (a range's `fromBlock`, a call's `to`, a tracer): one
// written in another case (`FROMBLOCK`, `TO` after `to`, `Tracer`) would be read by such a node and not by
// the gateway, past its range guard or a key's contract list. Such a member is refused.

/** The members the gateway reads by name in the calls of a mount, folded to lower case, each to its spelling. */
const readByName = new WeakMap<InterfacePolicy, ReadonlyMap<string, string>>();

/** The member names the mount's rules read, by their folded form (`membersRead`), computed once per policy. */
export function membersRead(policy: InterfacePolicy): ReadonlyMap<string, string> {
  let names = readByName.get(policy);
  if (names === undefined) {
    names = collect(policy);
    readByName.set(policy, names);
  }
  return names;
}

/**
 * The first member of an object in `params` that names a member the gateway reads (`read`) in another case;
 * undefined when there is none.
 */
export function memberInAnotherCase(
  params: unknown,
  read: ReadonlyMap<string, string>,
): { readonly member: string; readonly spelling: string } | undefined {
  if (read.size === 0 || typeof params !== "object" || params === null) return undefined;
  if (Array.isArray(params)) {
    for (const element of params) {
      const found = memberInAnotherCase(element, read);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  // JSON.parse kept the last of two exact spellings, as Go does: only another case can differ
  for (const [member, value] of Object.entries(params)) {
    const spelling = read.get(fold(member));
    if (spelling !== undefined && member !== spelling) return { member, spelling };
    const found = memberInAnotherCase(value, read);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** What a refusal of such a member says: the member, and how the node would read it. */
export function refusalOf(variant: { readonly member: string; readonly spelling: string }): {
  member: string;
  reason: string;
} {
  const { member, spelling } = variant;
  return {
    member,
    reason: `"${member}" is "${spelling}" in another case, which a node written in Go reads as "${spelling}" (the last of two wins): write it "${spelling}"`,
  };
}

/** Upper then lower case: ſ (U+017F) folds to s and K (U+212A) to k, as in Go's simple folding. */
function fold(name: string): string {
  return name.toUpperCase().toLowerCase();
}

function collect(policy: InterfacePolicy): ReadonlyMap<string, string> {
  const names = new Map<string, string>();
  const add = (name: string | number | undefined): void => {
    // a path's list positions, its wildcards and the envelope's own members are no member names of params
    if (
      name === undefined ||
      typeof name === "number" ||
      name === "*" ||
      name === "{}" ||
      name === "params" ||
      /^\d+$/.test(name)
    )
      return;
    names.set(fold(name), name);
  };
  for (const paths of Object.values(policy.contracts ?? {}))
    for (const path of paths) for (const name of path) add(name);
  for (const path of Object.values(policy.stateOverrides ?? {})) for (const name of path) add(name);
  for (const rule of Object.values(policy.stateDumps ?? {})) for (const name of rule.at) add(name);
  const reads = policy.jsonrpc?.reads;
  if (reads !== undefined) {
    add(reads.block.numberMember);
    add(reads.block.hashMember);
    add(reads.block.tagMember);
    for (const range of Object.values(reads.ranges ?? {})) {
      add(range.from);
      add(range.to);
      add(range.hash);
      for (const name of range.pages ?? []) add(name);
    }
    for (const list of Object.values(reads.paramNames ?? {})) for (const name of list) add(name);
  }
  // the roots of a REST rule's paths (`body.contract_address`, `path.1`), no member names: a REST body with
  // a contract rule is held to the same names (families/rest.ts): a REST node may decode it with Go's too
  names.delete("body");
  names.delete("path");
  return names;
}
