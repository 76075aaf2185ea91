import type { HttpMethod, MethodTable, RouteAccess, RouteNode } from "./types.js";

export type RouteMatch =
  | { readonly kind: "match"; readonly access: RouteAccess }
  | { readonly kind: "method-not-allowed"; readonly allow: readonly string[] }
  | { readonly kind: "not-found" };

const NOT_FOUND: RouteMatch = { kind: "not-found" };

/**
 * Walks a compiled route trie over already-split path segments. A static child wins over the parameter
 * child and the walk never goes back to try the other, so a lookup is one Map probe per segment. A
 * trailing `{name...}` seen on the way covers the rest of the path when the walk ends without a route.
 */
export function matchRoute(root: RouteNode, method: string, segments: readonly string[]): RouteMatch {
  let node: RouteNode | undefined = root;
  let wildcard: MethodTable | undefined;
  for (const segment of segments) {
    if (node.rest !== undefined) wildcard = node.rest;
    node = node.children?.get(segment) ?? node.param;
    if (node === undefined) break;
  }
  const exact = node?.methods;
  const access = accessFor(exact, method) ?? accessFor(wildcard, method);
  if (access !== undefined) return { kind: "match", access };
  if (exact === undefined && wildcard === undefined) return NOT_FOUND;
  return { kind: "method-not-allowed", allow: [...new Set([...keysOf(exact), ...keysOf(wildcard)])] };
}

function accessFor(table: MethodTable | undefined, method: string): RouteAccess | undefined {
  // Object.hasOwn: a method name must never reach an inherited property such as `constructor`.
  return table !== undefined && Object.hasOwn(table, method) ? table[method as HttpMethod] : undefined;
}

function keysOf(table: MethodTable | undefined): string[] {
  return table === undefined ? [] : Object.keys(table);
}
