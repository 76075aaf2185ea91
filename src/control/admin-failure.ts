import { ConfigError } from "../config/load.js";
import { GatewayError } from "../errors/table.js";
import { redactedText } from "../store/database-url.js";

/** A command line the CLI cannot read: an unknown command or flag, a flag without its value. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** The CLI's exit statuses, as its --help, docs/accounts.md and docs/errors.md list them. */
export const ADMIN_EXIT = { OK: 0, FAILED: 1, NOT_RUN: 2 } as const;

/**
 * A failure as the CLI reports it: one line, `error <CODE>: <message>`, for a terminal or a script to read,
 * and its exit status. Nothing was run (2) for a command line or a config it cannot use; the command failed
 * (1) for everything else, its code saying why (STORE_UNAVAILABLE: try again later). Never a stack trace:
 * an error the CLI did not expect is INTERNAL with its message.
 */
export function failureOf(error: unknown): { line: string; status: number } {
  const [code, message, status] =
    error instanceof UsageError
      ? ["USAGE", `${error.message}; --help lists the commands`, ADMIN_EXIT.NOT_RUN]
      : error instanceof ConfigError
        ? ["INVALID_CONFIG", `invalid configuration: ${error.message}`, ADMIN_EXIT.NOT_RUN]
        : isParseArgsError(error)
          ? ["USAGE", `${parseArgsMessage(error)}; --help lists the commands`, ADMIN_EXIT.NOT_RUN]
          : error instanceof GatewayError
            ? [error.code, `${error.message}${detailOf(error.detail)}`, ADMIN_EXIT.FAILED]
            : ["INTERNAL", error instanceof Error ? error.message : String(error), ADMIN_EXIT.FAILED];
  // One line whatever the message holds (a config's problems are one per line), and no password of a
  // store's URL even where a library's message repeats it.
  const line = redactedText(`error ${code}: ${message}`.replace(/\s*\n\s*/g, "; "));
  return { line, status };
}

function isParseArgsError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_");
}

/** `(field: --rate; reason: …)`: what the error's data says, as the API's `data` would. */
function detailOf(detail: Readonly<Record<string, unknown>> | undefined): string {
  if (detail === undefined) return "";
  const parts = Object.entries(detail).map(([name, value]) => `${name}: ${String(value)}`);
  return parts.length === 0 ? "" : ` (${parts.join("; ")})`;
}

// Node's own text for an unknown flag goes on about positional arguments that start with '-', which
// none of the commands takes: the flag is named instead.
function parseArgsMessage(error: Error): string {
  const unknown = /^Unknown option '([^']+)'/.exec(error.message);
  return unknown === null ? error.message : `unknown flag ${unknown[1]}`;
}
