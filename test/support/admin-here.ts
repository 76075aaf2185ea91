import { vi } from "vitest";
import { runAdmin } from "../../src/control/admin.js";

/** What one command line of the operator CLI wrote, and its exit status. */
export interface AdminRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/**
 * The operator CLI's command line `args`, run in this process as src/control/cli.ts runs it (its exit status
 * is runAdmin's), with `env` over the process's environment for its length: a CLI process loading
 * TypeScript through tsx costs about 2.5 s on a 2-core machine. The built CLI runs as its own process in
 * test/accounts/cli-dist.test.ts.
 */
export async function adminHere(env: Readonly<Record<string, string>>, ...args: string[]): Promise<AdminRun> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  let out = "";
  let err = "";
  const writes = [
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      out += String(chunk);
      return true;
    }),
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
      err += String(chunk);
      return true;
    }),
    vi.spyOn(console, "log").mockImplementation((...line: unknown[]) => {
      out += `${line.join(" ")}\n`;
    }),
  ];
  try {
    return { code: await runAdmin(args), out, err };
  } finally {
    for (const write of writes) write.mockRestore();
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
}
