// First: V8 settings must hold before the other modules run (v8-flags.ts).
import "./v8-flags.js";
import cluster from "node:cluster";

// The entry of the single executable dist/node-gateway (scripts/build-binary.ts). `node-gateway admin …` is
// the operator CLI (control/admin.ts), so that a host with only the binary can issue its first key; any
// other command line is the proxy's (proxy/main.ts). Each is loaded only when it runs. A cluster worker is
// always the proxy: its primary forked it with the proxy's own command line.

const args = process.argv.slice(2);
if (cluster.isPrimary && args[0] === "admin")
  void import("./control/admin.js")
    .then(({ runAdmin }) => runAdmin(args.slice(1)))
    .then((status) => {
      process.exitCode = status;
    });
else void import("./proxy/main.js");
