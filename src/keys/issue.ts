import { randomBytes } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `FN` and 32 base62 characters from the CSPRNG: about 190 bits, URL-path-safe without escaping. */
export function newApiKey(): string {
  let out = "FN";
  while (out.length < 34) {
    for (const byte of randomBytes(48)) {
      // 248 = 4 × 62: bytes above it are skipped, so every character is equally likely.
      if (byte < 248 && out.length < 34) out += ALPHABET[byte % 62];
    }
  }
  return out;
}
