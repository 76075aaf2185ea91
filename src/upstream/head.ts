import type { HeadEncoding } from "../registry/types.js";

/** A height as the registry's encoding writes it; throws when `value` is not one. */
export function decode(value: unknown, encoding: HeadEncoding, field: string): number {
  const height = readHeight(value, encoding);
  if (height === undefined)
    throw new Error(`${field} is not a height (${encoding}): ${JSON.stringify(value)?.slice(0, 80)}`);
  return height;
}

/** A height as the registry's encoding writes it, or undefined when `value` is not one. */
export function readHeight(value: unknown, encoding: HeadEncoding): number | undefined {
  let height = Number.NaN;
  if (encoding === "integer" && typeof value === "number") height = value;
  else if (encoding === "hex-quantity" && typeof value === "string" && /^0x[0-9a-f]+$/i.test(value))
    height = Number.parseInt(value.slice(2), 16);
  else if (encoding === "decimal-string" && typeof value === "string" && /^\d+$/.test(value))
    height = Number(value);
  return Number.isSafeInteger(height) && height >= 0 ? height : undefined;
}

/**
 * A height written in the registry's encoding but past what a double holds exactly (`0xffffffffffffffff`):
 * above any chain's head, and a node may read it as "up to my head" (geth clamps a log query's `toBlock`).
 */
export function isHeightPastSafe(value: unknown, encoding: HeadEncoding): boolean {
  if (typeof value === "number") return Number.isInteger(value) && value > Number.MAX_SAFE_INTEGER;
  if (typeof value !== "string") return false;
  if (encoding === "hex-quantity")
    return /^0x[0-9a-f]+$/i.test(value) && readHeight(value, encoding) === undefined;
  return encoding === "decimal-string" && /^\d+$/.test(value) && readHeight(value, encoding) === undefined;
}

/** A height written in the registry's encoding, for a call that takes one (a range query's bounds). */
export function encodeHeight(height: number, encoding: HeadEncoding): string | number {
  if (encoding === "hex-quantity") return `0x${height.toString(16)}`;
  return encoding === "decimal-string" ? String(height) : height;
}
