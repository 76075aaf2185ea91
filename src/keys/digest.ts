import { hash } from "node:crypto";

/**
 * How keys and tokens are stored and looked up: SHA-256, base64url. Looking up by digest leaks no timing
 * about how much of a secret matched, and a database dump holds no usable key. The one-shot `hash` runs
 * once per request and costs a third of createHash().update().digest().
 */
export function keyHash(secret: string): string {
  return hash("sha256", secret, "base64url");
}
