// Loaded with `node --import` before a customer's snippet runs: names under SNIPPET_HOSTS_DOMAIN resolve to
// 127.0.0.1 inside that process, as test/support/test-hosts.ts does in the test's own, so the snippet keeps
// the URL the customer is shown. net.connect reads dns.lookup when it connects, for node:http, axios and
// Node's own fetch alike. System DNS is not touched.
import dns from "node:dns";

const domain = process.env.SNIPPET_HOSTS_DOMAIN;
const original = dns.lookup;

dns.lookup = (hostname, options, callback) => {
  const cb = typeof options === "function" ? options : callback;
  const all = typeof options === "object" && options !== null && options.all === true;
  if (domain !== undefined && (hostname === domain || hostname.endsWith(`.${domain}`))) {
    if (all) cb(null, [{ address: "127.0.0.1", family: 4 }]);
    else cb(null, "127.0.0.1", 4);
    return;
  }
  return original(hostname, options, callback);
};
