import type { ChildProcess } from "node:child_process";

/** The port an entry point logs in its "… listening" JSON line on stderr. */
export function listeningPort(child: ChildProcess, message: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`no "${message}" line: ${seen}`)), 20_000);
    child.stderr?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      const line = seen.split("\n").find((l) => l.includes(`"msg":"${message}"`));
      if (line === undefined) return;
      clearTimeout(timer);
      resolve(JSON.parse(line).port);
    });
    child.once("exit", (code) => reject(new Error(`exited with ${code}: ${seen}`)));
  });
}

/** Kills a process the test started (its own child, by PID) if it still runs; resolves once it has exited. */
export async function killChild(
  child: ChildProcess | undefined,
  signal: NodeJS.Signals = "SIGKILL",
): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill(signal);
  await exited;
}
