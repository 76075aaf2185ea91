import { type NetworkEndpoints, tokenLink } from "../endpoint-urls.js";
import type { KeyRecord, PendingNotice } from "./types.js";

// Every e-mail the control plane sends, word for word. A token or a key stands alone on an indented line,
// which no transfer encoding rewrites, so it can be copied (and found by tests) as is. The endpoint URLs in a
// key e-mail come from endpoint-urls.ts, as the dashboard's do.

export interface Email {
  readonly subject: string;
  readonly text: string;
}

export function confirmationEmail(publicUrl: string, token: string, hours: number): Email {
  return {
    subject: "Confirm your e-mail address",
    text: `Confirm your account: open\n\n${tokenLink(publicUrl, "confirm", token)}\n\nor paste this token on the sign-in page:\n\n  ${token}\n\nWith the API: POST ${publicUrl}/v1/confirm {"token":"${token}"}\n\nIt expires in ${hours} hours.\n`,
  };
}

export function signInEmail(publicUrl: string, token: string): Email {
  return {
    subject: "Your sign-in token",
    text: `Sign in: open\n\n${tokenLink(publicUrl, "signin", token)}\n\nor paste this token on the sign-in page (valid for one hour):\n\n  ${token}\n\nWith the API: POST ${publicUrl}/v1/session {"token":"${token}"}\n`,
  };
}

/** A sign-up with an address that has an account: the way in is signing in, with a token. */
export function alreadySignedUpEmail(publicUrl: string, token: string): Email {
  return {
    subject: "You already have an account",
    text: `Someone, probably you, asked to sign up with this address, which already has an account. Sign in
instead: open

${tokenLink(publicUrl, "signin", token)}

or paste this token on the sign-in page (valid for one hour):

  ${token}

If it was not you, there is nothing to do: your account is as it was.
`,
  };
}

/** Why a key is sent, which its subject says. */
export type KeyOccasion =
  | { readonly kind: "free-test"; readonly network: string }
  | { readonly kind: "order"; readonly plan: string; readonly network: string }
  | { readonly kind: "rotation"; readonly oldPrefix: string; readonly graceEnds: number };

/** A new key, its scopes, and the URL of every label it reaches with the key already in. */
export function keyEmail(
  occasion: KeyOccasion,
  key: string,
  record: Pick<KeyRecord, "plan" | "networks" | "expiresAt">,
  endpoints: readonly NetworkEndpoints[],
): Email {
  const networks = record.networks === "*" ? "every network" : record.networks.join(", ");
  const until =
    record.expiresAt === undefined ? "until you revoke it" : `until ${readableTime(record.expiresAt)}`;
  return {
    subject: keySubject(occasion),
    text: `Your API key (${record.plan} plan, ${networks}, valid ${until}):\n\n  ${key}\n\n${replaces(occasion)}${endpointLines(endpoints)}Keep it secret. It is shown in this e-mail only; you can rotate or revoke it at any time.\n`,
  };
}

/** A rotated key's e-mail says which key it replaces and until when that one works. */
function replaces(occasion: KeyOccasion): string {
  if (occasion.kind !== "rotation") return "";
  return `It replaces the key ${occasion.oldPrefix}…, which works until ${readableTime(occasion.graceEnds)}: move your apps to this one before then.\n\n`;
}

function keySubject(occasion: KeyOccasion): string {
  switch (occasion.kind) {
    case "free-test":
      return `Your free test key for ${occasion.network}`;
    case "order":
      return `Your ${occasion.plan} node key for ${occasion.network}`;
    case "rotation":
      return `Your rotated key (${occasion.oldPrefix}… works until ${readableTime(occasion.graceEnds)})`;
  }
}

/** The key's URLs, network by network; nothing where the registry no longer has a label it reaches. */
function endpointLines(endpoints: readonly NetworkEndpoints[]): string {
  if (endpoints.length === 0) return "";
  const lines = ["Your endpoints (the key is the first path segment):", ""];
  for (const network of endpoints) {
    lines.push(`${network.name} (${network.code})`);
    for (const e of network.endpoints) {
      lines.push(`  ${e.label}: ${e.environment}, ${e.nodeClass} node`, `    HTTP:      ${e.http}`);
      if (e.ws !== undefined) lines.push(`    WebSocket: ${e.ws}`);
    }
    lines.push("");
  }
  return `${lines.join("\n")}\n`;
}

/** A quota at 80 % or spent: which key, which quota, when it resets, and where to see usage or get more. */
export function quotaEmail(notice: PendingNotice, publicUrl: string): Email {
  const period = notice.period.length === 10 ? "daily" : "monthly";
  const resets = readableTime(notice.resetsAt);
  const perAccount = notice.scope.startsWith("account:");
  const scope = perAccount
    ? `your account's keys on the ${notice.plan} plan`
    : `your key ${notice.keyPrefix}…`;
  // whose quota it is: a per-account quota is no one key's
  const whose = perAccount ? `your ${notice.plan} plan's keys` : `${notice.keyPrefix}…`;
  const spent = notice.threshold >= 100;
  return {
    subject: spent
      ? `The ${period} quota of ${whose} is reached`
      : `${notice.threshold}% of the ${period} quota of ${whose} used`,
    text: `${
      spent
        ? // also sent when a call was refused for costing more than was left, before the quota was all spent
          `The ${period} quota of ${scope} (${notice.quota.toLocaleString("en")} compute units on the ${notice.plan} plan) is reached: calls that cost more than what is left of it are refused with HTTP 402 (QUOTA_EXCEEDED) until it resets at ${resets}.`
        : `${scope[0]?.toUpperCase()}${scope.slice(1)} used ${notice.threshold}% of the ${period} quota (${notice.quota.toLocaleString("en")} compute units on the ${notice.plan} plan). At 100% calls are refused with HTTP 402 until it resets at ${resets}.`
    }\n\nSee the usage per key and network on the dashboard's overview:\n\n${publicUrl}/#/overview\n\nFor a higher quota, order a plan with more, or a dedicated node.\n`,
  };
}

/** A moment as a person reads it in an e-mail: "2026-11-28 00:00 UTC". */
function readableTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}
