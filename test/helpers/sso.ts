// Single sign-on in the tests: an organization proves a domain through the real DNS check (test/helpers/dns.ts).
import type { Client } from './http.ts';
import type { TestDnsServer } from './dns.ts';

/** Adds `domain` to the caller's organization, publishes its TXT record and verifies it; the domain's id. */
export async function proveDomain(api: Client, dns: TestDnsServer, domain: string, organizationId?: string): Promise<string> {
  const added = await api.post('/api/v1/domains', { domain, ...(organizationId ? { organization_id: organizationId } : {}) });
  if (added.status !== 201) throw new Error(`add domain failed: ${added.status} ${JSON.stringify(added.body)}`);
  dns.txt.set(added.body.verification.name, [added.body.verification.value]);
  const verified = await api.post(`/api/v1/domains/${added.body.id}/verify`);
  if (verified.status !== 200 || !verified.body.verified) throw new Error(`verify failed: ${verified.status} ${JSON.stringify(verified.body)}`);
  return added.body.id;
}
