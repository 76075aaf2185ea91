import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "./eventually.js";

/** An e-mail the control plane wrote to its outbox folder (no SMTP server configured), its body decoded. */
export interface OutboxMail {
  readonly file: string;
  readonly to: string;
  readonly body: string;
}

/** Every message in `dir`, oldest first (the mailer names files by time and sequence). */
export function outboxMails(dir: string): OutboxMail[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".eml"))
    .sort()
    .map((file) => {
      const raw = readFileSync(join(dir, file), "utf8");
      const split = raw.indexOf("\n\n");
      const headers = raw.slice(0, split);
      const body = raw.slice(split + 2);
      const to = /^To: (.*)$/im.exec(headers)?.[1]?.trim() ?? "";
      const encoded = /^Content-Transfer-Encoding: quoted-printable$/im.test(headers);
      return { file, to, body: encoded ? quotedPrintable(body) : body };
    });
}

/** A quoted-printable body as a mail client shows it: soft line breaks joined, `=3D` and the like undone. */
export function quotedPrintable(text: string): string {
  return text
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/**
 * The first message to `to` in `dir`, waited for: a sign-up or sign-in e-mail is made and sent after its
 * call's answer (src/control/accounts/sessions.ts).
 */
export async function mailTo(dir: string, to: string, timeoutMs = 5_000): Promise<OutboxMail> {
  let mail: OutboxMail | undefined;
  await eventually(
    () => {
      mail = outboxMails(dir).find((m) => m.to === to);
      return mail !== undefined;
    },
    timeoutMs,
    `an e-mail to ${to}`,
  );
  return mail as OutboxMail;
}
