import { endpointsByLabel } from "../../generated/endpoints.js";
import type { PlanSpec } from "../config/types.js";
import { routeShapes } from "../registry/match-route.js";

/** A plan as the pipeline applies it: its spec, and its disabled methods as one test. */
export interface PlanTerms extends PlanSpec {
  readonly name: string;
  /** Whether the plan refuses `method` (`disabledMethods`; `*` matches any run of characters). */
  disables(method: string): boolean;
}

/**
 * The deployment config's plans, each compiled once. A key whose plan the config no longer has (an
 * operator removed it while keys held it) is served on the shared plan's terms, which always exist.
 */
export class PlanBook {
  readonly #terms = new Map<string, PlanTerms>();
  readonly #fallback: PlanTerms;

  constructor(plans: Readonly<Record<string, PlanSpec>>) {
    for (const [name, spec] of Object.entries(plans)) this.#terms.set(name, termsOf(name, spec));
    const shared = this.#terms.get("shared");
    if (shared === undefined) throw new Error("plans: the shared plan is missing");
    this.#fallback = shared;
  }

  terms(name: string): PlanTerms {
    return this.#terms.get(name) ?? this.#fallback;
  }

  has(name: string): boolean {
    return this.#terms.has(name);
  }
}

function termsOf(name: string, spec: PlanSpec): PlanTerms {
  // a route whose shape holds a `*` of its own (`POST /accounts/*` in one interface of the registry), named whole, is that route
  // alone, as in a key's method list: not a pattern that disables the single call beside it too
  const literal = (m: string) => !m.includes("*") || starShapes().has(m);
  const exact = new Set(spec.disabledMethods.filter(literal));
  const patterns = spec.disabledMethods.filter((m) => !literal(m)).map(patternOf);
  return {
    ...spec,
    name,
    disables:
      exact.size === 0 && patterns.length === 0
        ? () => false
        : (method) => exact.has(method) || patterns.some((p) => p.test(method)),
  };
}

/** Whether a key granted archive nodes or not (`granted`) reaches them on a plan (`PlanSpec.archive`). */
export function reachesArchive(plan: PlanSpec["archive"] | undefined, granted: boolean): boolean {
  return plan === true || (plan === "granted" && granted);
}

/** `debug_*` as an anchored regular expression; everything but `*` is literal. */
export function patternOf(glob: string): RegExp {
  const escaped = glob.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, "\\$&"));
  return new RegExp(`^${escaped.join(".*")}$`);
}

let shapesWithStar: ReadonlySet<string> | undefined;

/**
 * The routes whose shape holds a `*` of its own (a batch call at `POST /accounts/*`): named whole in a key's
 * method list or a plan's disabledMethods, such an entry is that route alone, not a pattern that takes the
 * routes beside it too.
 */
export function starShapes(): ReadonlySet<string> {
  shapesWithStar ??= new Set(
    [...endpointsByLabel.values()]
      .flatMap((endpoint) => endpoint.mounts)
      .flatMap((mount) => (mount.policy.routes === undefined ? [] : routeShapes(mount.policy.routes)))
      .filter((shape) => shape.includes("*")),
  );
  return shapesWithStar;
}
