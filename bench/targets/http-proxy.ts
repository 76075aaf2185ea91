// http-proxy on node:http, as a user would set it up: a keep-alive agent, so it is not measuring
// connection set-up, and the upstream request destroyed when the client leaves. Without that, each client
// that hangs up before its large answer is complete leaves an agent socket stuck behind a paused response;
// after 64 of them (one 1 MB run's worth) every later request waits forever. Seen here on Node 20 with
// http-proxy 1.18.1, whose only guard is req's "aborted" event, which a client leaving after its request
// was read no longer triggers.
import { Agent, createServer } from "node:http";
import httpProxy from "http-proxy";

const proxy = httpProxy.createProxyServer({
  target: process.env.BENCH_UPSTREAM as string,
  agent: new Agent({ keepAlive: true, maxSockets: 64 }),
});
// http-proxy emits proxyReq once the agent gives the request a socket, which may be after its client left.
proxy.on("proxyReq", (proxyReq, _req, res) => {
  if (res.destroyed) proxyReq.destroy();
  else
    res.once("close", () => {
      if (!res.writableFinished) proxyReq.destroy();
    });
});
proxy.on("error", (_error, _req, res) => {
  if ("writeHead" in res && !res.headersSent) res.writeHead(502);
  res.end();
});
const server = createServer((req, res) => proxy.web(req, res));
server.listen(Number(process.env.BENCH_PORT), "127.0.0.1");
