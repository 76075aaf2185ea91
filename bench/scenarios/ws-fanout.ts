// WebSocket fan-out: idle subscribed connections held by a fresh gateway, then notifications pushed to all
// of them; the same load straight to the node for comparison.
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { BENCH_DOMAIN, BENCH_KEY } from "../gateway-config.js";
import type { Check, FanoutRow } from "../report.js";
import type { Scenario } from "../scenario.js";
import { wsFanout } from "../ws-load.js";

export const webSocketFanout: Scenario = {
  name: "WebSocket fan-out",
  async run({ launcher, node, deployment, quick }) {
    // A fresh gateway, so the memory per connection is not blurred by heap that earlier load left behind;
    // as many workers as the open-file limit needs to hold every connection (two sockets each).
    const connections = quick ? 500 : 10_000;
    const workers = Math.min(cpus().length, Math.ceil((2 * connections) / (openFileLimit() - 1000)));
    const holder = await launcher.startGateway(workers === 1 ? "gateway" : `gateway, ${workers} workers`, {
      deployment,
      workers,
    });
    const pushes = quick ? 3 : 10;
    const direct = await wsFanout({ url: node.ws, connections, pushes, pushUrl: node.pushUrl });
    const relayed = await wsFanout({
      url: `ws://127.0.0.1:${holder.port}/${BENCH_KEY}`,
      host: `eth.${BENCH_DOMAIN}`,
      connections,
      pushes,
      pushUrl: node.pushUrl,
      rss: () => holder.rss(),
    });
    await holder.stop();
    const fanout = [
      { target: "direct", ...direct },
      { target: holder.name, ...relayed },
    ];
    // Over 500 connections the RSS moves by the heaps' growth steps more than by the connections (27 to
    // 47 KB each in quick runs of a build that reads 16.5 KB over 10,000): the check is the full run's.
    if (quick) return { rows: [], fanout, checks: [], notes: noteOf(fanout) };
    return { rows: [], fanout, checks: judge(fanout) };
  },
};

/** This process's hard limit on open files (RLIMIT_NOFILE), which the processes it starts inherit. */
function openFileLimit(): number {
  const line = /^Max open files\s+\S+\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  if (line?.[1] === "unlimited") return Number.POSITIVE_INFINITY;
  const limit = Number(line?.[1]);
  return Number.isFinite(limit) ? limit : 1024;
}

/** A quick run's reading, told but not judged (`npm run bench -- --scenario fan-out` judges it). */
function noteOf(fanout: readonly FanoutRow[]): string[] {
  const ws = fanout.find((f) => f.target !== "direct");
  if (ws?.marginalBytesPerConnection === undefined) return [];
  return [
    `idle WebSocket connection: ${(ws.marginalBytesPerConnection / 1024).toFixed(1)} KB of gateway RSS each from ${ws.connections / 2} to ${ws.connections} connections, unjudged in a quick run (the 18 KB check runs over 10,000: npm run bench -- --scenario fan-out)`,
  ];
}

function judge(fanout: readonly FanoutRow[]): Check[] {
  const ws = fanout.find((f) => f.target !== "direct");
  // What one more idle connection costs: the growth from N/2 to N. The growth over all N also carries each
  // process's heaps growing for the burst of handshakes, once per worker, and is printed beside it.
  if (ws?.marginalBytesPerConnection === undefined || ws.bytesPerConnection === undefined) return [];
  return [
    {
      name: `idle WebSocket connection ≤ 18 KB of gateway RSS, from ${ws.connections / 2} to ${ws.connections} connections`,
      pass: ws.marginalBytesPerConnection <= 18 * 1024,
      measured: `${(ws.marginalBytesPerConnection / 1024).toFixed(1)} KB each (${ws.target}; over all ${ws.connections}, with the heaps' growth, ${(ws.bytesPerConnection / 1024).toFixed(1)} KB each)`,
    },
  ];
}
