// The SSRF guard on every IPv6 spelling that embeds an IPv4 address: mapped, SIIT, compatible, NAT64 (well-known and
// local-use), 6to4 and Teredo are refused whatever the IPv4 inside, as a URL literal and as a DNS answer, unless
// private networks are allowed. `https://[::ffff:0:7f00:1]/` and `https://[64:ff9b:1::7f00:1]/` once reached loopback.
import { describe, expect, it } from 'vitest';
import { checkDestination, isPrivateAddress, type WebhookSettings } from '../../../schema/push/destination.ts';
import { DestinationError } from '../../../schema/push/push.errors.ts';

const REFUSED = 'resolves to a private, loopback, link-local or reserved address';

/** [range, address as written in a URL or a DNS answer]. */
const embedding: [string, string][] = [
  ['IPv4-mapped ::ffff:0:0/96', '::ffff:127.0.0.1'],
  ['IPv4-mapped ::ffff:0:0/96', '::ffff:7f00:1'],
  ['IPv4-mapped ::ffff:0:0/96', '::FFFF:7F00:1'],
  ['IPv4-mapped ::ffff:0:0/96', '0:0:0:0:0:ffff:7f00:1'],
  ['IPv4-mapped ::ffff:0:0/96', '0000:0000:0000:0000:0000:FFFF:A9FE:A9FE'],
  ['IPv4-mapped ::ffff:0:0/96', '::ffff:8.8.8.8'],
  ['SIIT ::ffff:0:0:0/96', '::ffff:0:7f00:1'],
  ['SIIT ::ffff:0:0:0/96', '::ffff:0:127.0.0.1'],
  ['SIIT ::ffff:0:0:0/96', '0:0:0:0:ffff:0:a9fe:a9fe'],
  ['SIIT ::ffff:0:0:0/96', '0000:0000:0000:0000:FFFF:0000:0A00:0001'],
  ['SIIT ::ffff:0:0:0/96', '::ffff:0:8.8.8.8'],
  ['IPv4-compatible ::/96', '::127.0.0.1'],
  ['IPv4-compatible ::/96', '::7f00:1'],
  ['IPv4-compatible ::/96', '0:0:0:0:0:0:a9fe:a9fe'],
  ['IPv4-compatible ::/96', '::8.8.8.8'],
  ['NAT64 64:ff9b::/96', '64:ff9b::7f00:1'],
  ['NAT64 64:ff9b::/96', '64:ff9b::127.0.0.1'],
  ['NAT64 64:ff9b::/96', '64:FF9B::A9FE:A9FE'],
  ['NAT64 64:ff9b::/96', '0064:ff9b:0000:0000:0000:0000:0808:0808'],
  ['NAT64 64:ff9b::/96', '64:ff9b::8.8.8.8'],
  ['local-use NAT64 64:ff9b:1::/48', '64:ff9b:1::7f00:1'],
  ['local-use NAT64 64:ff9b:1::/48', '64:ff9b:1::127.0.0.1'],
  ['local-use NAT64 64:ff9b:1::/48', '64:FF9B:1:0:0:0:A9FE:A9FE'],
  ['local-use NAT64 64:ff9b:1::/48', '0064:ff9b:0001:ffff:ffff:ffff:0a00:0001'],
  ['local-use NAT64 64:ff9b:1::/48', '64:ff9b:1:abcd::8.8.8.8'],
  ['6to4 2002::/16', '2002:7f00:1::'],
  ['6to4 2002::/16', '2002:a9fe:a9fe::1'],
  ['6to4 2002::/16', '2002:0808:0808:0000:0000:0000:0000:0001'],
  ['6to4 2002::/16', '2002:C000:0204::1.2.3.4'],
  ['Teredo 2001::/32', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
  ['Teredo 2001::/32', '2001::7f00:1'],
  ['Teredo 2001::/32', '2001:0:0:0:0:0:127.0.0.1'],
  ['Teredo 2001::/32', '2001:0000:ABCD:0000:0000:0000:0000:0001'],
];
/** DNS answers may carry a zone id, which a URL cannot. */
const withZone = ['::ffff:127.0.0.1%eth0', '::ffff:0:7f00:1%1', '64:ff9b:1::7f00:1%eth0', 'fe80::1%eth0'];
const PUBLIC_V6 = [
  '2606:4700:4700::1111',
  '2a00:1450:4001::1',
  '2001:4860:4860::8888',
  '2001:200::1',
  '2003::1',
  '2A00:1450:4001:0:0:0:0:1',
];

const guarded: WebhookSettings = { timeoutMs: 1000, allowPrivateNetworks: false };
const allowing: WebhookSettings = { timeoutMs: 1000, allowPrivateNetworks: true };
/** Settings whose resolver answers `address` for every name, as DNS would. */
const answering = (address: string, base = guarded): WebhookSettings => ({
  ...base,
  resolve: async () => [{ address, family: 6 }],
});

async function refusal(url: string, settings: WebhookSettings): Promise<string | null> {
  try {
    await checkDestination(url, settings);
    return null;
  } catch (error) {
    if (!(error instanceof DestinationError)) throw error;
    return error.message;
  }
}

describe('checkDestination with IPv6 addresses that embed IPv4', () => {
  it('holds every range in the table, each in several spellings', () => {
    expect(embedding.length).toBeGreaterThanOrEqual(25);
    expect(new Set(embedding.map(([range]) => range)).size).toBe(7);
  });

  it.each(embedding)('refuses %s as %s, in a URL and as a DNS answer', async (_range, address) => {
    expect(isPrivateAddress(address)).toBe(true);
    expect(await refusal(`https://[${address}]/hook`, guarded)).toBe(REFUSED);
    expect(await refusal('https://hooks.example.test/hook', answering(address))).toBe(REFUSED);
  });

  it.each(withZone)('refuses the DNS answer %s with a zone id', async (address) => {
    expect(isPrivateAddress(address)).toBe(true);
    expect(await refusal('https://hooks.example.test/hook', answering(address))).toBe(REFUSED);
  });

  it('refuses the two addresses of the report, as they were sent', async () => {
    expect(await refusal('https://[::ffff:0:7f00:1]/', guarded)).toBe(REFUSED);
    expect(await refusal('https://[64:ff9b:1::7f00:1]/', guarded)).toBe(REFUSED);
  });

  it.each(PUBLIC_V6)('still accepts the public address %s', async (address) => {
    expect(isPrivateAddress(address)).toBe(false);
    expect(await refusal(`https://[${address}]/hook`, guarded)).toBeNull();
    expect(await refusal('https://hooks.example.test/hook', answering(address))).toBeNull();
  });

  it('leaves IPv4 as it was: public addresses accepted, private ones refused', async () => {
    for (const address of ['93.184.215.14', '8.8.8.8', '1.1.1.1']) {
      expect(isPrivateAddress(address), address).toBe(false);
      expect(await refusal(`https://${address}/hook`, guarded), address).toBeNull();
    }
    for (const address of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '192.168.1.1', '100.64.0.1', '0.0.0.0']) {
      expect(isPrivateAddress(address), address).toBe(true);
      expect(await refusal(`https://${address}/hook`, guarded), address).toBe(REFUSED);
    }
  });

  it('accepts every embedding address when private networks are allowed', async () => {
    for (const [, address] of embedding) {
      expect(await refusal(`https://[${address}]/hook`, allowing), address).toBeNull();
      expect(await refusal('https://hooks.example.test/hook', answering(address, allowing)), address).toBeNull();
    }
  });

  it('refuses what it cannot read rather than letting it through', () => {
    for (const address of ['', 'localhost', '::ffff:127.0.0.1:80', '1::2::3'])
      expect(isPrivateAddress(address), address).toBe(true);
  });
});
