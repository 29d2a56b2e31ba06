// Where a webhook may be sent (SSRF guard): an https URL whose host resolves only to public addresses, unless
// WEBHOOK_ALLOW_PRIVATE_NETWORKS is set. Checked at creation and again before every attempt, and the attempt then
// connects to the very address that was checked (sender.ts), so a DNS answer that changes in between (rebinding)
// cannot reach an internal address.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

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
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

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
// unique-local (fd00:ec2::254 is a metadata address too) and the prefixes that embed an IPv4 address.
const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) blocked.addSubnet(net, bits, 'ipv6');

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible, NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address. */
function embeddedIpv4(address: string): string | null {
  const groups = expandIpv6(address);
  if (!groups) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zeros(0, 5) && (groups[5] === 0xffff || groups[5] === 0)) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!);
  return null;
}

/** Eight 16-bit groups of an IPv6 address (dotted IPv4 tail allowed), or null. */
function expandIpv6(address: string): number[] | null {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') as [string, string] : [text, null];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === null ? 0 : 8 - left.length - right.length;
  if (fill < 0) return null;
  const groups = [...left, ...Array(fill).fill('0'), ...right].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

/** True for an address a webhook may never reach unless private networks are allowed. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const inner = embeddedIpv4(address);
  if (inner && blocked.check(inner, 'ipv4')) return true;
  return blocked.check(address, 'ipv6');
}

export class DestinationError extends Error {}

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
    if (!addresses.length) throw new DestinationError(`its host ${host} does not resolve`);
  }
  // Every answer must be public: a name with one private address among public ones is refused too.
  if (!settings.allowPrivateNetworks && addresses.some((a) => isPrivateAddress(a.address))) {
    throw new DestinationError('resolves to a private, loopback, link-local or reserved address');
  }
  return { url, address: addresses[0]! };
}
