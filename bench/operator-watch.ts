// The gateway's view of one label's upstreams, read as an operator reads it: GET /upstreams on its
// operator API, every 50 ms, keeping each upstream's changes of state with the moment they were seen.

const EVERY_MS = 50;

/** An upstream's state as one answer of the operator API showed it. */
export interface Seen {
  /** performance.now() when the answer arrived: the change happened at most one poll before. */
  readonly at: number;
  readonly state: string;
  readonly lastError: string | null;
}

interface UpstreamsReport {
  readonly processes: readonly {
    readonly labels: readonly {
      readonly label: string;
      readonly upstreams: readonly { name: string; state: string; lastError: string | null }[];
    }[];
  }[];
}

/** Each upstream of `label` as one GET /upstreams answer shows it (the first process's, with one process). */
export function statesOf(report: UpstreamsReport, label: string): Map<string, Omit<Seen, "at">> {
  const group = report.processes[0]?.labels.find((l) => l.label === label);
  return new Map(group?.upstreams.map((u) => [u.name, { state: u.state, lastError: u.lastError }]));
}

export class UpstreamWatch {
  /** Per upstream, every state it was seen in, from the first answer on, in order. */
  readonly changes = new Map<string, Seen[]>();
  #stopped = false;
  readonly #done: Promise<void>;

  constructor(
    readonly operatorPort: number,
    readonly label: string,
  ) {
    this.#done = this.#poll();
  }

  /**
   * The first time since `since` that `upstream` was seen in a state that passes `test`, waiting up to
   * `timeoutMs` for it; undefined if it was not.
   */
  async until(
    upstream: string,
    test: (state: string) => boolean,
    since: number,
    timeoutMs: number,
  ): Promise<Seen | undefined> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const seen = this.changes.get(upstream)?.find((s) => s.at >= since && test(s.state));
      if (seen !== undefined || performance.now() > deadline || this.#stopped) return seen;
      await sleep(EVERY_MS / 2);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#done;
  }

  async #poll(): Promise<void> {
    const url = `http://127.0.0.1:${this.operatorPort}/upstreams`;
    while (!this.#stopped) {
      const asked = performance.now();
      try {
        const answer = await fetch(url, { signal: AbortSignal.timeout(1000) });
        const states = statesOf((await answer.json()) as UpstreamsReport, this.label);
        this.#note(states, performance.now());
      } catch {
        // not answering yet (starting), or slow under load: the next poll tells
      }
      await sleep(Math.max(0, asked + EVERY_MS - performance.now()));
    }
  }

  #note(states: Map<string, Omit<Seen, "at">>, at: number): void {
    for (const [name, { state, lastError }] of states) {
      const list = this.changes.get(name) ?? [];
      if (list.at(-1)?.state !== state) list.push({ at, state, lastError });
      this.changes.set(name, list);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
