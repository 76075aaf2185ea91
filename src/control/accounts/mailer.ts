import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import nodemailer from "nodemailer";
import type { AccountsConfig } from "../../config/types.js";

export interface Mailer {
  send(to: string, subject: string, text: string): Promise<void>;
}

/** SMTP through nodemailer when a server is configured; otherwise .eml files in the outbox folder. */
export function createMailer(mail: AccountsConfig["mail"]): Mailer {
  if (mail.smtp !== undefined) {
    const { host, port, secure = false, user, pass } = mail.smtp;
    const transport = nodemailer.createTransport({
      host,
      port,
      secure,
      ...(user === undefined ? {} : { auth: { user, pass: pass ?? "" } }),
    });
    return {
      async send(to, subject, text) {
        await transport.sendMail({ from: mail.from, to, subject, text });
      },
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" });
  mkdirSync(mail.outbox, { recursive: true });
  let sequence = 0;
  return {
    async send(to, subject, text) {
      const info = await transport.sendMail({ from: mail.from, to, subject, text });
      const name = `${new Date().toISOString().replace(/[:.]/g, "-")}-${++sequence}.eml`;
      writeFileSync(join(mail.outbox, name), info.message as Buffer);
    },
  };
}
