// First: V8 settings must hold before the other modules run (v8-flags.ts).
import "./v8-flags.js";
import cluster from "node:cluster";

// The entry of the single executable dist/node-gateway (scripts/build-binary.ts). `node-gateway admin …` is
// the operator CLI (control/admin.ts), so that a host with only the binary can issue its first key; any
// other command line is the proxy's (proxy/main.ts). Each is loaded only when it runs. A cluster worker is
// always the proxy: its primary forked it with the proxy's own command line.

const args = process.argv.slice(2);
// node:cluster forks a worker as `<execPath> <exec> <args>`, `exec` being argv[1] unless told: a single
// executable's argv[1] is the path as typed (dist/node-gateway, or a bare name found on PATH), which a
// worker could not tell from its first argument. Its absolute path it can (proxy/main.ts, ownArgs).
if (cluster.isPrimary) cluster.setupPrimary({ exec: process.execPath });
if (cluster.isPrimary && args[0] === "admin")
  void import("./control/admin.js")
    .then(({ runAdmin }) => runAdmin(args.slice(1)))
    .then((status) => {
      process.exitCode = status;
    });
else void import("./proxy/main.js");
