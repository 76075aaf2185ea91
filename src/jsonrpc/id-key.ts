/**
 * A JSON-RPC id by its value, as a node that reads it and writes it back may: `"a"` and `"\u0061"`, `0`,
 * `-0` and `0.0` are one id. Two calls with one id could not be told apart by their answers, and an answer
 * may carry its call's id written otherwise than the call did (reth and anvil write it back by value).
 * The common ids (a plain string, a small integer) are their own key, with nothing parsed.
 */
export function idKey(id: string | undefined): string {
  if (id === undefined) return "null";
  if (PLAIN.test(id)) return id;
  // an integer keeps its digits, past 2^53 too (ids there are echoed exactly); -0 is 0
  if (INTEGER.test(id)) return id === "-0" ? "0" : id;
  try {
    return JSON.stringify(JSON.parse(id));
  } catch {
    return id;
  }
}

/**
 * Whether every node software echoes the id as sent: a plain string or a small non-negative integer. Nodes
 * that read ids as strings or integers (anvil, reth's u64) answer a fractional or huge one, and reth a
 * negative one, with `"id":null`, an error that is the id's, not the call's: a call with another id may
 * not lead identical calls of other callers (src/cache/).
 */
export function isPlainId(id: string): boolean {
  return PLAIN.test(id);
}

/**
 * Whether a node that reads ids as strings or u64 (anvil, reth) cannot read the id, and answers its call
 * with `"id":null`: a number with a fraction or an exponent, or an integer past u64. Narrower than
 * `isPlainId`: anvil answers -1 or an escaped string by its own id, so a null-id error is never theirs.
 */
export function isUnreadableId(id: string): boolean {
  if (!/^-?\d/.test(id)) return false; // a string, null or a boolean
  if (/[.eE]/.test(id)) return true;
  // an integer past u64, by its digits; not a negative one, which anvil answers by its id (reth's null
  // for one then goes to no call, rather than to another's)
  return !id.startsWith("-") && (id.length > 20 || (id.length === 20 && id > U64_MAX));
}

const U64_MAX = "18446744073709551615";

// a string with no escape in it, or a small integer
const PLAIN = /^(?:"[^"\\]*"|0|[1-9][0-9]{0,14})$/;
const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
