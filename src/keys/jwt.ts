import { createPublicKey, type KeyObject, verify } from "node:crypto";

/** A public key a key's owner uploaded: PEM (SPKI), RSA or EC P-256, with an optional id a token names. */
export interface JwtKey {
  readonly id?: string;
  readonly pem: string;
}

/** Why a token was refused: what JWT_REQUIRED's `data.reason` says. */
export type JwtRefusal =
  | "missing"
  | "malformed"
  | "unsupported algorithm"
  | "unsupported critical header"
  | "bad signature"
  | "no exp claim"
  | "expired"
  | "not yet valid";

/** Seconds of clock difference forgiven on `exp` and `nbf`. */
const LEEWAY_S = 30;
/** Tokens verified lately, by their text: a client sends the same one with every call until it expires. */
const MAX_REMEMBERED = 10_000;

/** The key object of a PEM public key, or an error saying why it is none (RSA or P-256 only). */
export function publicKeyOf(pem: string): KeyObject {
  // node:crypto derives the public key from a private one: one pasted by mistake must not be kept
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem))
    throw new Error("a public key: this is a private key, which never leaves its owner's servers");
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    throw new Error("a public key in PEM (-----BEGIN PUBLIC KEY-----)");
  }
  const type = key.asymmetricKeyType;
  if (type === "rsa") return key;
  if (type === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1") return key;
  throw new Error("an RSA or an EC P-256 public key (RS256 or ES256)");
}

/**
 * The WebSocket subprotocol a browser names to carry its JWT, since its WebSocket cannot send headers:
 * `new WebSocket(url, ["bearer", "bearer." + jwt])`, answered with `bearer` (docs/plans.md, "Key settings").
 * A JWT's characters (base64url and dots) are all allowed in a subprotocol's name.
 */
export const BEARER_PROTOCOL = "bearer";

/** The `Authorization` value an upgrade's `bearer.<JWT>` subprotocol carries, else undefined. */
export function bearerOfProtocols(offered: string | undefined): string | undefined {
  if (offered === undefined) return undefined;
  for (const part of offered.split(",")) {
    const protocol = part.trim();
    if (protocol.startsWith(`${BEARER_PROTOCOL}.`))
      return `Bearer ${protocol.slice(BEARER_PROTOCOL.length + 1)}`;
  }
  return undefined;
}

/**
 * Verifies a JWT (RS256 or ES256) against a key's uploaded public keys: signature, `exp` (required) and
 * `nbf`. With node:crypto rather than a JOSE library: the pipeline's admission is synchronous (each await
 * showed in its profile, pipeline/http.ts), and the libraries verify asynchronously; the format is a few
 * lines (RFC 7519, RFC 7515 §5.2). A token verified once is remembered until its `exp`.
 */
export class JwtVerifier {
  readonly #keys: readonly { id: string | undefined; key: KeyObject }[];
  readonly #verified = new Map<string, number>();

  constructor(keys: readonly JwtKey[]) {
    this.#keys = keys.map((k) => ({ id: k.id, key: publicKeyOf(k.pem) }));
  }

  /**
   * Why `authorization` carries no valid token; or, when it does, when that token stops being valid (its
   * `exp`, with the clock difference forgiven, in ms since the epoch): a WebSocket connection opened with
   * it ends then.
   */
  verdict(authorization: string | undefined, nowMs: number = Date.now()): JwtRefusal | number {
    if (authorization === undefined || !/^Bearer /i.test(authorization)) return "missing";
    const token = authorization.slice(7).trim();
    const now = nowMs / 1000;
    const until = this.#verified.get(token);
    if (until !== undefined) {
      if (until + LEEWAY_S > now) return (until + LEEWAY_S) * 1000;
      this.#verified.delete(token);
      return "expired";
    }
    const parts = token.split(".");
    if (parts.length !== 3) return "malformed";
    const [head = "", body = "", signature = ""] = parts;
    let header: { alg?: unknown; kid?: unknown; crit?: unknown };
    let claims: { exp?: unknown; nbf?: unknown };
    try {
      header = JSON.parse(Buffer.from(head, "base64url").toString("utf8"));
      claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
    } catch {
      return "malformed";
    }
    if (typeof header !== "object" || header === null || typeof claims !== "object" || claims === null)
      return "malformed";
    const alg = header.alg;
    if (alg !== "RS256" && alg !== "ES256") return "unsupported algorithm";
    // A token whose `crit` names extensions must be refused by a verifier that does not understand them
    // (RFC 7515, 4.1.11), and the gateway understands none.
    if (header.crit !== undefined) return "unsupported critical header";
    const signed = Buffer.from(`${head}.${body}`);
    const sig = Buffer.from(signature, "base64url");
    const candidates = this.#keys.filter(
      (k) =>
        (typeof header.kid !== "string" || k.id === undefined || k.id === header.kid) &&
        (alg === "RS256" ? k.key.asymmetricKeyType === "rsa" : k.key.asymmetricKeyType === "ec"),
    );
    const valid = candidates.some(({ key }) =>
      verify("sha256", signed, alg === "ES256" ? { key, dsaEncoding: "ieee-p1363" } : key, sig),
    );
    if (!valid) return "bad signature";
    // a token that never expires is one a leak makes good for ever: the owner's signer must set one
    if (typeof claims.exp !== "number") return "no exp claim";
    if (claims.exp + LEEWAY_S <= now) return "expired";
    if (typeof claims.nbf === "number" && claims.nbf - LEEWAY_S > now) return "not yet valid";
    if (this.#verified.size >= MAX_REMEMBERED) this.#verified.clear();
    if (typeof claims.nbf !== "number" || claims.nbf <= now) this.#verified.set(token, claims.exp);
    return (claims.exp + LEEWAY_S) * 1000;
  }
}
