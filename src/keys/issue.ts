import { randomBytes } from "node:crypto";
import { KEY_PREFIX } from "./types.js";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** The key prefix and 32 base62 characters from the CSPRNG: about 190 bits, URL-path-safe without escaping. */
export function newApiKey(): string {
  let out = KEY_PREFIX;
  const length = KEY_PREFIX.length + 32;
  while (out.length < length) {
    for (const byte of randomBytes(48)) {
      // 248 = 4 × 62: bytes above it are skipped, so every character is equally likely.
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}
