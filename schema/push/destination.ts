// Where a webhook may be sent (SSRF guard): an https URL whose host resolves only to public addresses, unless
// WEBHOOK_ALLOW_PRIVATE_NETWORKS is set. Checked at creation and again before every attempt, and the attempt then
// connects to the very address that was checked (sender.ts), so a DNS answer that changes in between (rebinding)
// cannot reach an internal address.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, SocketAddress } from 'node:net';
import { DestinationError } from './push.errors.ts';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Every address a host name resolves to; tests pass their own instead of asking DNS. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface WebhookSettings {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** Extra CA certificates (PEM) trusted for receivers, beside Node's own roots. */
  ca?: string;
  resolve?: HostResolver;
}

export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = { timeoutMs: 10_000, allowPrivateNetworks: false };

const lookupAll: HostResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

// Answers are kept a few seconds: a lookup per attempt was a large share of a delivery's CPU. Every attempt still
// checks the answer it uses and connects to that very address, so a name that changes meanwhile reaches nothing new.
const RESOLVED_FOR_MS = 5_000;
const resolved = new Map<string, { until: number; addresses: Promise<ResolvedAddress[]> }>();
export const systemResolver: HostResolver = (hostname) => {
  const now = performance.now();
  const kept = resolved.get(hostname);
  if (kept && kept.until > now) return kept.addresses;
  if (resolved.size >= 1000) resolved.clear();
  const addresses = lookupAll(hostname);
  resolved.set(hostname, { until: now + RESOLVED_FOR_MS, addresses });
  addresses.catch(() => resolved.delete(hostname));
  return addresses;
};

// Not public: "this network", private (RFC 1918), CGNAT, loopback, link-local (cloud metadata at 169.254.169.254),
// IETF protocol assignments, documentation, benchmarking, multicast and reserved ranges; their IPv6 counterparts,
// unique-local (fd00:ec2::254 is a metadata address too) and every prefix that embeds an IPv4 address, refused
// whatever the IPv4 inside: a receiver never needs a translation range, and decoding each one left gaps (SIIT and
// local-use NAT64 reached 127.0.0.1). One list per family: BlockList tests an IPv4 address against IPv6 rules as
// ::ffff:a.b.c.d, so ::ffff:0:0/96 beside the IPv4 rules would refuse every IPv4 address.
const blocked = { ipv4: new BlockList(), ipv6: new BlockList() };
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.ipv4.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 96], // unspecified, loopback and IPv4-compatible (RFC 4291 2.5.5.1)
  ['::ffff:0:0', 96], // IPv4-mapped (RFC 4291 2.5.5.2)
  ['::ffff:0:0:0', 96], // SIIT IPv4-translated (RFC 2765)
  ['64:ff9b::', 96], // well-known NAT64 (RFC 6052)
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215)
  ['100::', 64],
  ['2001::', 23],
  ['2001::', 32], // Teredo (RFC 4380), inside 2001::/23 but named for itself
  ['2001:db8::', 32],
  ['2002::', 16], // 6to4 (RFC 3056)
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  blocked.ipv6.addSubnet(net, bits, 'ipv6');

/** True for an address a webhook may never reach unless private networks are allowed. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (!family) return true;
  // BlockList reads every spelling (case, zero-compression, dotted tails) but answers false for one it cannot
  // parse, so the address is parsed here first and refused if that fails. A zone id (fe80::1%eth0) names no network.
  const list = family === 6 ? 'ipv6' : 'ipv4';
  let parsed: SocketAddress;
  try {
    parsed = new SocketAddress({ address: address.replace(/%.*$/, ''), family: list });
  } catch {
    return true;
  }
  return blocked[list].check(parsed);
}

export interface Destination {
  url: URL;
  /** The address the request connects to: the one that was checked. */
  address: ResolvedAddress;
}

/** Parses and checks a receiver URL; resolves its host once and returns the address to connect to. */
export async function checkDestination(rawUrl: string, settings: WebhookSettings): Promise<Destination> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new DestinationError('is not a URL');
  }
  if (url.protocol !== 'https:') throw new DestinationError('must be an https URL');
  if (url.username || url.password) throw new DestinationError('must not carry credentials');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: ResolvedAddress[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await (settings.resolve ?? systemResolver)(host);
    } catch {
      throw new DestinationError(`its host ${host} does not resolve`);
    }
  }
  const [first] = addresses;
  if (!first) throw new DestinationError(`its host ${host} does not resolve`);
  // Every answer must be public: a name with one private address among public ones is refused too.
  if (!settings.allowPrivateNetworks && addresses.some((a) => isPrivateAddress(a.address))) {
    throw new DestinationError('resolves to a private, loopback, link-local or reserved address');
  }
  return { url, address: first };
}
