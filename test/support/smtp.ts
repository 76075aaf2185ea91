import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

export interface CapturedMail {
  readonly to: string[];
  readonly raw: string;
}

export interface SmtpCapture {
  readonly port: number;
  readonly mails: CapturedMail[];
  /** Waits for the next message to `to` and returns its raw text. */
  next(to: string, timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

/**
 * A real SMTP server on loopback that keeps every message it accepts; with `acceptDelayMs`, it takes that
 * long to accept each one, as a mail server across the internet does.
 */
export async function startSmtp(options: { acceptDelayMs?: number } = {}): Promise<SmtpCapture> {
  const mails: CapturedMail[] = [];
  const waiters: { to: string; resolve: (raw: string) => void }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const mail = {
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
        };
        mails.push(mail);
        for (const waiter of [...waiters]) {
          if (mail.to.includes(waiter.to)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(mail.raw);
          }
        }
        setTimeout(callback, options.acceptDelayMs ?? 0);
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    mails,
    next(to, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no e-mail to ${to}`)), timeoutMs);
        waiters.push({
          to,
          resolve: (raw) => {
            clearTimeout(timer);
            resolve(raw);
          },
        });
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The API key in a key e-mail. */
export function keyIn(mail: string): string {
  const match = /\b(FN[A-Za-z0-9]{32})\b/.exec(mail);
  if (match === null) throw new Error(`no key in e-mail:\n${mail}`);
  return match[1] as string;
}

/** The token in a confirmation or sign-in e-mail. */
export function tokenIn(mail: string): string {
  // The token stands alone on an indented line, which no transfer encoding rewrites.
  const match = /^ {2}([A-Za-z0-9_-]{32})\r?$/m.exec(mail);
  if (match === null) throw new Error(`no token in e-mail:\n${mail}`);
  return match[1] as string;
}
