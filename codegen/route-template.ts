import type { HttpMethod, RouteAccess } from "../src/registry/types.js";

export type Segment =
  | { readonly kind: "static"; readonly value: string }
  | { readonly kind: "param"; readonly name: string }
  | { readonly kind: "rest"; readonly name: string };

export interface RouteTemplate {
  readonly text: string;
  readonly methods: readonly HttpMethod[];
  readonly segments: readonly Segment[];
}

const HTTP_METHODS = new Set<string>(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]);
const STATIC_SEGMENT = /^(?:[A-Za-z0-9_.~-]+|\*)$/;
const PARAM_SEGMENT = /^\{([a-z][a-z0-9_]*)(\.\.\.)?\}$/;

/** Parses `GET|POST /chains/{chain}/blocks/{path...}`; throws an Error whose message names the defect. */
export function parseRouteTemplate(text: string): RouteTemplate {
  const space = text.indexOf(" ");
  if (space < 0) throw new Error(`route "${text}" needs "METHOD /path"`);
  const methods = text.slice(0, space).split("|");
  for (const method of methods) {
    if (!HTTP_METHODS.has(method)) throw new Error(`route "${text}" has unknown HTTP method "${method}"`);
  }
  if (new Set(methods).size !== methods.length) throw new Error(`route "${text}" repeats an HTTP method`);
  const path = text.slice(space + 1);
  if (!path.startsWith("/")) throw new Error(`route "${text}" must have a path that starts with "/"`);
  const parts = path === "/" ? [] : path.slice(1).split("/");
  const names = new Set<string>();
  const segments = parts.map((part, index): Segment => {
    if (part === "") throw new Error(`route "${text}" has an empty path segment`);
    if (part === "." || part === "..") throw new Error(`route "${text}" has a dot segment`);
    const param = PARAM_SEGMENT.exec(part);
    if (param === null) {
      if (!STATIC_SEGMENT.test(part)) {
        throw new Error(`route "${text}": segment "${part}" is neither a literal nor a whole {parameter}`);
      }
      return { kind: "static", value: part };
    }
    const name = param[1] as string;
    if (names.has(name)) throw new Error(`route "${text}" uses parameter {${name}} twice`);
    names.add(name);
    if (param[2] === undefined) return { kind: "param", name };
    if (index !== parts.length - 1) throw new Error(`route "${text}": {${name}...} must be the last segment`);
    return { kind: "rest", name };
  });
  return { text, methods: methods as HttpMethod[], segments };
}

/** A mutable trie used while compiling; emit.ts prints it as a generated RouteNode literal. */
export interface TrieNode {
  children: Map<string, TrieNode>;
  param?: TrieNode;
  rest?: Partial<Record<HttpMethod, RouteAccess>>;
  /** The shape of the routes that end in `rest` (`/chains/{}/blocks/{...}`): a metric's label. */
  restShape?: string;
  methods?: Partial<Record<HttpMethod, RouteAccess>>;
  /** The shape of the routes that end at this node. */
  shape?: string;
}

/** A route's path with its parameters unnamed: `/v2/accounts/{}`, `/chains/{}/blocks/{...}`. */
export function shapeOf(route: RouteTemplate): string {
  return `/${route.segments.map((s) => (s.kind === "static" ? s.value : s.kind === "param" ? "{}" : "{...}")).join("/")}`;
}

export function emptyTrie(): TrieNode {
  return { children: new Map() };
}

/** Adds a route; returns the access already there when the same method and shape was added before. */
export function insertRoute(
  root: TrieNode,
  route: RouteTemplate,
  access: RouteAccess,
): RouteAccess | undefined {
  let node = root;
  let table: Partial<Record<HttpMethod, RouteAccess>> | undefined;
  for (const segment of route.segments) {
    if (segment.kind === "static") {
      let child = node.children.get(segment.value);
      if (child === undefined) {
        child = emptyTrie();
        node.children.set(segment.value, child);
      }
      node = child;
    } else if (segment.kind === "param") {
      node.param ??= emptyTrie();
      node = node.param;
    } else {
      node.rest ??= {};
      node.restShape = shapeOf(route);
      table = node.rest;
    }
  }
  if (table === undefined) {
    node.methods ??= {};
    node.shape = shapeOf(route);
    table = node.methods;
  }
  let previous: RouteAccess | undefined;
  for (const method of route.methods) {
    previous ??= table[method];
    table[method] ??= access;
  }
  return previous;
}

/** A concrete path that the template matches, with every parameter replaced by a sample value. */
export function samplePath(route: RouteTemplate): string[] {
  return route.segments.map((segment) => (segment.kind === "static" ? segment.value : "sample"));
}
