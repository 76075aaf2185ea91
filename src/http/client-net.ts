import { isIPv4, isIPv6 } from "node:net";

/**
 * The network a client address is counted by: an IPv4 address itself (also when written IPv4-mapped), an
 * IPv6 address's /64. One host or subscriber is routinely given a whole /64, so counting its addresses one
 * by one would give it 2^64 buckets to draw from, and let it flood the table.
 */
export function clientNet(ip: string): string {
  const address = ip.split("%")[0] as string;
  if (!isIPv6(address)) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined && isIPv4(mapped)) return mapped;
  const [head = "", tail] = address.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  // an embedded IPv4 tail is two groups; it only ever falls in the last 64 bits, which are dropped
  const rightGroups = right.reduce((n, g) => n + (g.includes(".") ? 2 : 1), 0);
  const groups =
    tail === undefined ? left : [...left, ...Array(8 - left.length - rightGroups).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}
