import type { HttpMethod, MethodTable, RouteAccess, RouteNode } from "./types.js";

export type RouteMatch =
  | { readonly kind: "match"; readonly access: RouteAccess; readonly shape: string }
  | { readonly kind: "method-not-allowed"; readonly allow: readonly string[] }
  | { readonly kind: "not-found" };

const NOT_FOUND: RouteMatch = { kind: "not-found" };

/** Every route a trie serves, as `METHOD /shape` (`GET /chains/{}/blocks/{}`): what a key's method list names. */
export function routeShapes(root: RouteNode): string[] {
  const shapes: string[] = [];
  const visit = (node: RouteNode): void => {
    for (const method of Object.keys(node.methods ?? {})) shapes.push(`${method} ${node.shape}`);
    for (const method of Object.keys(node.rest ?? {})) shapes.push(`${method} ${node.restShape}`);
    for (const child of node.children?.values() ?? []) visit(child);
    if (node.param !== undefined) visit(node.param);
  };
  visit(root);
  return shapes;
}

/**
 * Walks a compiled route trie over already-split path segments. A static child wins over the parameter
 * child and the walk never goes back to try the other, so a lookup is one Map probe per segment. A
 * trailing `{name...}` seen on the way covers the rest of the path when the walk ends without a route.
 */
export function matchRoute(root: RouteNode, method: string, segments: readonly string[]): RouteMatch {
  let node: RouteNode | undefined = root;
  let wildcard: MethodTable | undefined;
  let wildShape: string | undefined;
  for (const segment of segments) {
    if (node.rest !== undefined) {
      wildcard = node.rest;
      wildShape = node.restShape;
    }
    node = node.children?.get(segment) ?? node.param;
    if (node === undefined) break;
  }
  const exact = node?.methods;
  const exactAccess = accessFor(exact, method);
  if (exactAccess !== undefined) return { kind: "match", access: exactAccess, shape: node?.shape ?? "" };
  const wildAccess = accessFor(wildcard, method);
  if (wildAccess !== undefined) return { kind: "match", access: wildAccess, shape: wildShape ?? "" };
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
