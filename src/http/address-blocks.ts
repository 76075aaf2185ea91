import { BlockList, isIP } from "node:net";

/** An IP address or a CIDR block, as a BlockList takes it. */
export interface AddressBlock {
  readonly address: string;
  /** The prefix's length; undefined for one address. */
  readonly bits: number | undefined;
  readonly family: "ipv4" | "ipv6";
}

/**
 * `entry` as an address or a CIDR block (`203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`), or undefined when
 * it is neither: a host name is never looked up. An IPv4 address written in IPv6's mapped form
 * (`::ffff:10.0.0.1`, `::ffff:10.0.0.0/104`) is its IPv4 form, so that it matches however a socket shows it.
 */
export function addressBlock(entry: string): AddressBlock | undefined {
  const [address = "", bits, extra] = entry.split("/");
  const family = isIP(address);
  const max = family === 4 ? 32 : 128;
  if (family === 0 || extra !== undefined) return undefined;
  if (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= max)) return undefined;
  const length = bits === undefined ? undefined : Number(bits);
  const ipv4 = mappedIpv4(address);
  if (ipv4 !== undefined && (length === undefined || length >= 96))
    return { address: ipv4, bits: length === undefined ? undefined : length - 96, family: "ipv4" };
  return { address, bits: length, family: family === 4 ? "ipv4" : "ipv6" };
}

/**
 * Whether an address is one of `entries` or inside one of their blocks, each entry one `addressBlock`
 * takes (the config's checks refuse the others before this is built). An address that is not an IP
 * address (a forged X-Forwarded-For hop) is in none.
 */
export function addressMatcher(entries: readonly string[]): (ip: string) => boolean {
  const list = new BlockList();
  for (const entry of entries) {
    const block = addressBlock(entry);
    if (block === undefined) throw new Error(`not an IP address or a CIDR block: ${entry}`);
    if (block.bits === undefined) list.addAddress(block.address, block.family);
    else list.addSubnet(block.address, block.bits, block.family);
  }
  return (ip) => {
    // an IPv4 client on a dual-stack socket shows as ::ffff:a.b.c.d
    const address = mappedIpv4(ip) ?? ip;
    const family = isIP(address);
    return family !== 0 && list.check(address, family === 4 ? "ipv4" : "ipv6");
  };
}

function mappedIpv4(address: string): string | undefined {
  if (address.length < 14 || !/^::ffff:/i.test(address)) return undefined;
  const ipv4 = address.slice(7);
  return isIP(ipv4) === 4 ? ipv4 : undefined;
}
