import { GatewayError } from "../../errors/table.js";
import type { Account, AccountStore, KeyRecord } from "./types.js";

// What callers send the account service, checked the same way by each part that takes it.

const EMAIL =
  /^[^\s@<>(),;:"[\]\\]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

/** An e-mail address, trimmed and lower-cased, or INVALID_EMAIL. */
export function emailOf(input: unknown): string {
  if (typeof input !== "string" || input.length > 254 || !EMAIL.test(input.trim()))
    throw new GatewayError("INVALID_EMAIL");
  return input.trim().toLowerCase();
}

/** A network code the registry has, or INVALID_FIELD / NETWORK_NOT_FOUND. */
export function networkOf(input: unknown, networks: ReadonlySet<string>): string {
  if (typeof input !== "string") throw new GatewayError("INVALID_FIELD", { field: "network" });
  if (!networks.has(input)) throw new GatewayError("NETWORK_NOT_FOUND", { network: input });
  return input;
}

/** The account's key with this id (a number, or its digits from a URL), or KEY_NOT_FOUND. */
export async function ownKey(store: AccountStore, account: Account, keyId: unknown): Promise<KeyRecord> {
  const id = typeof keyId === "number" ? keyId : Number(keyId);
  const key = Number.isInteger(id) ? await store.key(id) : undefined;
  // Someone else's key is "not found": its existence is not revealed.
  if (key === undefined || key.accountId !== account.id) throw new GatewayError("KEY_NOT_FOUND");
  return key;
}
