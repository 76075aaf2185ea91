import type { Plan } from "../../keys/types.js";
import type { KeyRecord } from "./types.js";

/** A key as its owner sees it in a listing: never the key itself. */
export interface KeyView {
  readonly id: number;
  readonly prefix: string;
  readonly plan: Plan;
  readonly networks: readonly string[] | "*";
  readonly archive: boolean;
  readonly status: "active" | "expired" | "revoked";
  readonly createdAt: string;
  readonly expiresAt: string | undefined;
  readonly replacedBy: number | undefined;
  /** Its own rate limit; undefined for the gateway's default (`defaultRate`). */
  readonly rate: KeyRecord["rate"];
  /** What its owner restricted it to (docs/plans.md, "Key settings"); `{}` for nothing. */
  readonly settings: KeyRecord["settings"];
}

export function keyView(key: KeyRecord, now: number): KeyView {
  return {
    id: key.id,
    prefix: key.prefix,
    plan: key.plan,
    networks: key.networks,
    archive: key.archive,
    status: keyStatus(key, now),
    createdAt: new Date(key.createdAt).toISOString(),
    expiresAt: key.expiresAt === undefined ? undefined : new Date(key.expiresAt).toISOString(),
    replacedBy: key.replacedBy,
    rate: key.rate,
    settings: key.settings,
  };
}

/** The store keeps only "revoked"; a key past its expiry is "expired" from that moment, without a job. */
export function keyStatus(key: KeyRecord, now: number): KeyView["status"] {
  if (key.status === "revoked") return "revoked";
  return key.expiresAt !== undefined && key.expiresAt <= now ? "expired" : "active";
}
