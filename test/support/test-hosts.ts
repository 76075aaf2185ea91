import dns from "node:dns";
import { DOMAIN } from "./gateway.js";

type Lookup = typeof dns.lookup;

/**
 * Makes `<label>.gw.test` resolve to 127.0.0.1 inside this test process, without system DNS, so SDKs can
 * be pointed at real gateway URLs unmodified. net.connect reads dns.lookup at connect time. Returns undo.
 */
export function resolveTestHosts(): () => void {
  const original: Lookup = dns.lookup;
  const patched = ((hostname: string, options: unknown, callback?: unknown) => {
    const cb = (typeof options === "function" ? options : callback) as (...args: unknown[]) => void;
    const opts = (typeof options === "object" && options !== null ? options : {}) as { all?: boolean };
    if (hostname === DOMAIN || hostname.endsWith(`.${DOMAIN}`)) {
      if (opts.all) cb(null, [{ address: "127.0.0.1", family: 4 }]);
      else cb(null, "127.0.0.1", 4);
      return;
    }
    return (original as (...args: unknown[]) => void)(hostname, options, callback);
  }) as Lookup;
  dns.lookup = patched;
  return () => {
    dns.lookup = original;
  };
}
