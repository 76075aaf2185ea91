/**
 * What the scanners that read JSON-RPC bodies by character code share: JSON's structural characters and
 * the envelope's member names.
 */
export const QUOTE = 34;
export const BACKSLASH = 92;
export const OPEN_OBJECT = 123;
export const CLOSE_OBJECT = 125;
export const OPEN_ARRAY = 91;
export const CLOSE_ARRAY = 93;
export const COMMA = 44;
export const COLON = 58;

/**
 * The envelope member named by the text between `from` and `to`, or undefined. Found in place, the name
 * needs no new string, and a Map keyed on it finds its hash already computed.
 */
export function envelopeNameAt(text: string, from: number, to: number): string | undefined {
  const length = to - from;
  if (length === 6) {
    if (text.startsWith("method", from)) return "method";
    return text.startsWith("params", from) ? "params" : undefined;
  }
  if (length === 2) return text.startsWith("id", from) ? "id" : undefined;
  if (length === 7) return text.startsWith("jsonrpc", from) ? "jsonrpc" : undefined;
  return undefined;
}
