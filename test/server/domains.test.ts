// Verified domains for single sign-on (docs/architecture.md#single-sign-on): an organization's owners (admins only read them) add
// a domain, publish `_tessera-verification.<domain>` TXT `tessera-verification=<token>`, and Tessera looks it up
// through DNS_SERVERS, here a real DNS server on 127.0.0.1 (test/helpers/dns.ts). A failed check says what was found,
// safely; a domain proven by one organization cannot be proven by another, also when both try at once.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client, type Reply } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { ConfigError, loadConfig } from '../../server/config.ts';

let dns: TestDnsServer;
let server: TestServer;
let platform: Client;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ env: { DNS_SERVERS: dns.address } });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  [tenant, other] = await Promise.all([createTenant(server.url, platform), createTenant(server.url, platform)]);
});
afterAll(async () => {
  await server?.stop();
  await dns?.stop();
});
beforeEach(() => {
  dns.mode = 'answer';
});

interface DomainBody {
  id: string;
  domain: string;
  verified: boolean;
  verification: { type: 'TXT'; name: string; value: string };
  verified_at: string | null;
  checked_at: string | null;
  created_at: string;
}

/** A name no other test uses. */
const freshName = () => `${randomBytes(5).toString('hex')}.example.com`;

async function add(api: Client, domain = freshName(), extra: Record<string, unknown> = {}): Promise<DomainBody> {
  const reply = await api.post('/api/v1/domains', { domain, ...extra });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

/** Publishes the domain's proof (and any other values) at its verification name. */
function publish(d: DomainBody, ...others: string[]) {
  dns.txt.set(d.verification.name, [...others.map((v) => v), d.verification.value]);
}

const verify = (api: Client, d: { id: string }) => api.post(`/api/v1/domains/${d.id}/verify`);
const auditsOf = (action: string, targetId: string) =>
  server.base.db.auditLog.findMany({ where: { action, targetId }, orderBy: { createdAt: 'asc' } });
const statusCounts = (replies: Reply[]) =>
  replies.reduce<Record<string, number>>(
    (n, r) => ({
      ...n,
      [`${r.status} ${r.body?.error ?? ''}`.trim()]: (n[`${r.status} ${r.body?.error ?? ''}`.trim()] ?? 0) + 1,
    }),
    {},
  );

function expectRefusal(reply: Reply, status: number, error: string) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.body.error).toBe(error);
}

describe('POST /api/v1/domains', () => {
  it('claims a domain, unverified, and names the TXT record that proves it', async () => {
    // given an owner of the organization
    const name = freshName();
    // when they add the name as a person might type it
    const reply = await tenant.owner.api.post('/api/v1/domains', { domain: `  ${name.toUpperCase()}. ` });
    // then it is stored lower-case without the trailing dot, with a random token to publish
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body).toEqual({
      id: expect.any(String),
      domain: name,
      verified: false,
      verification: {
        type: 'TXT',
        name: `_tessera-verification.${name}`,
        value: expect.stringMatching(/^tessera-verification=[A-Za-z0-9_-]{32}$/),
      },
      verified_at: null,
      checked_at: null,
      created_at: expect.any(String),
    });
    const row = await server.base.db.domain.findUniqueOrThrow({ where: { id: reply.body.id } });
    expect(row).toMatchObject({ organizationId: tenant.id, domain: name, verifiedAt: null });
    expect(reply.body.verification.value).toBe(`tessera-verification=${row.verificationToken}`);
    expect(await auditsOf('domain.add', reply.body.id)).toEqual([
      expect.objectContaining({ organizationId: tenant.id, outcome: 'success', details: { domain: name } }),
    ]);

    // and a second domain gets a token of its own
    expect((await add(tenant.owner.api)).verification.value).not.toBe(reply.body.verification.value);
  });

  it('stores an internationalized name in punycode', async () => {
    const added = await add(tenant.owner.api, 'Bücher.Example');
    expect(added.domain).toBe('xn--bcher-kva.example');
    expect(added.verification.name).toBe('_tessera-verification.xn--bcher-kva.example');
    // Full-width letters are mapped to their plain forms (UTS #46), as a browser does.
    expect((await add(tenant.owner.api, 'ｆｕｌｌ.example')).domain).toBe('full.example');
  });

  it('answers 409 conflict for the same domain twice in one organization, while another organization may claim it too', async () => {
    const name = freshName();
    await add(tenant.owner.api, name);
    expectRefusal(await tenant.owner.api.post('/api/v1/domains', { domain: name.toUpperCase() }), 409, 'conflict');
    expect((await add(other.owner.api, name)).domain).toBe(name);
    expect(await server.base.db.domain.count({ where: { domain: name } })).toBe(2);
  });

  it('refuses what is not a plain domain name with 400 at `domain`, never a 500', async () => {
    const refused: unknown[] = [
      '',
      '   ',
      'a\u0000b.example.com',
      'a\u0007b.example.com',
      'x.example.com\r\nX-Injected: 1',
      '\u001b[31mred.example.com',
      '192.0.2.1',
      '192.0.2.1.',
      '1.2.3',
      '0x7f.1',
      '::1',
      '[::1]',
      '2001:db8::1',
      '*.x.com',
      '*',
      'https://x.com',
      'http://x.com/path',
      'x.com:8080',
      'x.com/path',
      'x.com?q=1',
      'x.com#f',
      'user@x.com',
      'x%41.com',
      'x'.repeat(300),
      `${'a.'.repeat(127)}com`,
      `${'a'.repeat(64)}.com`,
      'localhost',
      'com',
      '-x.com',
      'x-.com',
      'a..b.com',
      'bad_label.com',
      'two words.com',
      '\ufffd.com',
      'a\u200db.com',
      42,
      1.5,
      true,
      null,
      ['x.com'],
      { domain: 'x.com' },
    ];
    for (const domain of refused) {
      const reply = await tenant.owner.api.post('/api/v1/domains', { domain });
      expect(reply.status, `${JSON.stringify(domain)}: ${JSON.stringify(reply.body)}`).toBe(400);
      expect(reply.body.error).toBe('invalid_request');
      expect(reply.body.details?.[0]?.path, JSON.stringify(domain)).toBe('domain');
    }
    // A missing domain, an unknown field, a body that is not an object.
    for (const body of [{}, { domain: 'ok.example.com', verified: true }, '[]', '"x.com"']) {
      const reply = await tenant.owner.api.post('/api/v1/domains', body);
      expect(reply.status, `${JSON.stringify(body)}: ${JSON.stringify(reply.body)}`).toBe(400);
    }
    expect(
      await server.base.db.domain.count({
        where: { organizationId: tenant.id, domain: { in: ['ok.example.com', 'x.com'] } },
      }),
    ).toBe(0);
  });

  it('refuses invalid UTF-8 in the body with 400', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"domain":"a'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('.example.com"}'),
    ]);
    const res = await fetch(new URL('/api/v1/domains', server.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.owner.token}`, 'content-type': 'application/json' },
      body: bytes,
    });
    expect(res.status, await res.clone().text()).toBe(400);
    expect((await res.json()).error).toBe('invalid_request');
  });

  it('is for owners: an admin or a member gets 403, another organization 404, nobody signed in 401', async () => {
    expectRefusal(await tenant.admin.api.post('/api/v1/domains', { domain: freshName() }), 403, 'forbidden');
    expectRefusal(await tenant.member.api.post('/api/v1/domains', { domain: freshName() }), 403, 'forbidden');
    expectRefusal(
      await other.owner.api.post('/api/v1/domains', { domain: freshName(), organization_id: tenant.id }),
      404,
      'not_found',
    );
    expectRefusal(await client(server.url).post('/api/v1/domains', { domain: freshName() }), 401, 'unauthenticated');
    // A platform admin acts for any organization.
    expect((await add(platform, freshName(), { organization_id: other.id })).verified).toBe(false);
  });
});

describe('GET /api/v1/domains', () => {
  it("lists the organization's domains, paged, and nobody else's", async () => {
    const mine = [await add(tenant.owner.api), await add(tenant.owner.api)];
    const theirs = await add(other.owner.api);
    const listed = await tenant.owner.api.get('/api/v1/domains?limit=100');
    expect(listed.status).toBe(200);
    const ids = listed.body.domains.map((d: DomainBody) => d.id);
    expect(ids).toEqual(expect.arrayContaining(mine.map((d) => d.id)));
    expect(ids).not.toContain(theirs.id);
    expect(listed.body.domains.find((d: DomainBody) => d.id === mine[0]!.id)).toEqual(mine[0]);

    const first = await tenant.owner.api.get('/api/v1/domains?limit=1');
    expect(first.body.domains).toHaveLength(1);
    const second = await tenant.owner.api.get(`/api/v1/domains?limit=1&cursor=${first.body.next_cursor}`);
    expect(second.body.domains[0].id).not.toBe(first.body.domains[0].id);

    // Admins read them.
    expect((await tenant.admin.api.get('/api/v1/domains?limit=100')).body.domains.map((d: DomainBody) => d.id)).toEqual(
      expect.arrayContaining(mine.map((d) => d.id)),
    );
    expectRefusal(await tenant.member.api.get('/api/v1/domains'), 403, 'forbidden');
    expectRefusal(await tenant.owner.api.get(`/api/v1/domains?organization_id=${other.id}`), 404, 'not_found');
    expect(
      (await platform.get(`/api/v1/domains?organization_id=${other.id}`)).body.domains.map((d: DomainBody) => d.id),
    ).toContain(theirs.id);
  });
});

describe('POST /api/v1/domains/{id}/verify', () => {
  it('verifies the domain when its TXT record is published, among other records', async () => {
    // given a domain whose proof is published beside an SPF record
    const added = await add(tenant.owner.api);
    publish(added, 'v=spf1 -all');
    // when an admin asks for the check
    const reply = await verify(tenant.owner.api, added);
    // then the domain is verified, and the check is audited
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({
      id: added.id,
      domain: added.domain,
      verified: true,
      verification: added.verification,
    });
    expect(reply.body.verified_at).toEqual(expect.any(String));
    expect(reply.body.checked_at).toBe(reply.body.verified_at);
    expect(dns.questions).toContain(added.verification.name);
    expect(await auditsOf('domain.verify', added.id)).toEqual([
      expect.objectContaining({ outcome: 'success', organizationId: tenant.id, details: { domain: added.domain } }),
    ]);

    // and verifying it again answers it as it is, without asking DNS
    const asked = dns.questions.length;
    dns.txt.delete(added.verification.name);
    const again = await verify(tenant.owner.api, added);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(reply.body);
    expect(dns.questions.length).toBe(asked);
    expect(await auditsOf('domain.verify', added.id)).toHaveLength(1);
  });

  it('takes a value split into several character-strings, and surrounding spaces', async () => {
    const added = await add(tenant.owner.api);
    const [head, tail] = [added.verification.value.slice(0, 10), added.verification.value.slice(10)];
    dns.txt.set(added.verification.name, [[head, tail]]);
    expect((await verify(tenant.owner.api, added)).body.verified).toBe(true);

    const spaced = await add(tenant.owner.api);
    dns.txt.set(spaced.verification.name, [` ${spaced.verification.value} `]);
    expect((await verify(tenant.owner.api, spaced)).body.verified).toBe(true);
  });

  it('answers 409 verification_failed naming the values it found, and records the check', async () => {
    // given a domain whose record holds another token
    const added = await add(tenant.owner.api);
    dns.txt.set(added.verification.name, [
      'tessera-verification=not-the-token',
      'v=spf1 include:_spf.example.com ~all',
    ]);
    // when it is checked
    const reply = await verify(tenant.owner.api, added);
    // then the answer says what was found, in the message and in the details
    expectRefusal(reply, 409, 'verification_failed');
    expect(reply.body.error_description).toContain(added.verification.name);
    expect(reply.body.error_description).toContain(added.verification.value);
    expect(reply.body.error_description).toContain('"tessera-verification=not-the-token"');
    expect(reply.body.error_description).toContain('"v=spf1 include:_spf.example.com ~all"');
    expect(reply.body.details).toEqual([
      { path: 'domain', message: 'found "tessera-verification=not-the-token", "v=spf1 include:_spf.example.com ~all"' },
    ]);
    // and the domain stays unverified, checked now
    const row = await server.base.db.domain.findUniqueOrThrow({ where: { id: added.id } });
    expect(row.verifiedAt).toBeNull();
    expect(row.checkedAt).not.toBeNull();
    const listed = (await tenant.owner.api.get('/api/v1/domains?limit=100')).body.domains.find(
      (d: DomainBody) => d.id === added.id,
    );
    expect(listed).toMatchObject({ verified: false, verified_at: null, checked_at: row.checkedAt!.toISOString() });
    expect(await auditsOf('domain.verify', added.id)).toEqual([
      expect.objectContaining({
        outcome: 'failure',
        details: expect.objectContaining({ domain: added.domain, reason: 'verification_failed' }),
      }),
    ]);

    // and once the record is fixed, the next check passes
    publish(added);
    expect((await verify(tenant.owner.api, added)).body.verified).toBe(true);
  });

  it('says so when there is no TXT record, or no such name', async () => {
    const added = await add(tenant.owner.api);
    dns.txt.delete(added.verification.name);
    const nxdomain = await verify(tenant.owner.api, added);
    expectRefusal(nxdomain, 409, 'verification_failed');
    expect(nxdomain.body.error_description).toContain('found no TXT record');
    expect(nxdomain.body.details).toEqual([{ path: 'domain', message: 'found no TXT record' }]);

    dns.txt.set(added.verification.name, []);
    const nodata = await verify(tenant.owner.api, added);
    expectRefusal(nodata, 409, 'verification_failed');
    expect(nodata.body.details[0].message).toBe('found no TXT record');
  });

  it("reports the DNS server's failure, and its silence, as the reason", async () => {
    const added = await add(tenant.owner.api);
    publish(added);
    dns.mode = 'servfail';
    const failed = await verify(tenant.owner.api, added);
    expectRefusal(failed, 409, 'verification_failed');
    expect(failed.body.details[0].message).toBe('the DNS server failed to answer (ESERVFAIL)');

    dns.mode = 'silent';
    const started = Date.now();
    const silent = await verify(tenant.owner.api, added);
    expectRefusal(silent, 409, 'verification_failed');
    expect(silent.body.details[0].message).toBe('the DNS server did not answer (ETIMEOUT)');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await server.base.db.domain.findUniqueOrThrow({ where: { id: added.id } })).verifiedAt).toBeNull();

    dns.mode = 'answer';
    expect((await verify(tenant.owner.api, added)).body.verified).toBe(true);
  }, 30_000);

  it('shows hostile records safely: NUL bytes and control characters escaped, long values cut, many values counted', async () => {
    // given a record written to attack whoever reads the message
    const added = await add(tenant.owner.api);
    const hostile = [
      Buffer.from([0x61, 0x00, 0x62, 0x0a, 0x0d, 0x1b, 0x5b, 0x33, 0x31, 0x6d, 0x7f, 0xc2, 0x9b, 0x63]), // a NUL b LF CR ESC[31m DEL CSI c
      'right\u202eto-left\u2028line\u200bzero "quoted" \\slash',
      Buffer.from([0xff, 0xfe, 0x41]), // not UTF-8
      'x'.repeat(600), // split into three character-strings
      ...Array.from({ length: 96 }, (_, i) => `value-${i}`),
    ];
    dns.txt.set(added.verification.name, hostile);
    // when it is checked
    const res = await fetch(new URL(`/api/v1/domains/${added.id}/verify`, server.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.owner.token}` },
    });
    const text = await res.text();
    // then the answer is a 409 whose raw text holds no control, bidi or separator characters
    expect(res.status, text).toBe(409);
    expect(text).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u200b\u2028\u2029\u202e]/);
    expect(text.length).toBeLessThan(4000);
    const body = JSON.parse(text);
    expect(body.error).toBe('verification_failed');
    const found: string = body.details[0].message;
    expect(found).toContain('"a\\u0000b\\u000a\\u000d\\u001b[31m\\u007f\\u009bc"');
    expect(found).toContain('"right\\u202eto-left\\u2028line\\u200bzero \\"quoted\\" \\\\slash"');
    expect(found).toContain(`"${'x'.repeat(100)}…"`);
    expect(found).not.toContain('x'.repeat(101));
    expect(found).toContain('"\ufffd\ufffdA"');
    expect(found).toContain('"value-5"');
    expect(found).not.toContain('"value-6"');
    expect(found).toMatch(/ and 90 more$/);
    expect(body.error_description).toContain(found);
    // and the audit entry keeps the same safe text
    const [entry] = await auditsOf('domain.verify', added.id);
    expect((entry!.details as { found: string }).found).toBe(found);
  });

  it('is for owners of the domain’s organization: an admin or a member gets 403, another organization 404', async () => {
    const added = await add(tenant.owner.api);
    publish(added);
    expectRefusal(await verify(tenant.admin.api, added), 403, 'forbidden');
    expectRefusal(await verify(tenant.member.api, added), 403, 'forbidden');
    expectRefusal(await verify(other.owner.api, added), 404, 'not_found');
    expectRefusal(await verify(tenant.owner.api, { id: randomUUID() }), 404, 'not_found');
    expectRefusal(await verify(client(server.url), added), 401, 'unauthenticated');
    expect((await server.base.db.domain.findUniqueOrThrow({ where: { id: added.id } })).verifiedAt).toBeNull();
  });

  it('lets exactly one of two organizations verify a domain both prove at once; the other is told it is taken', async () => {
    // given two organizations that claim the same name, both tokens published
    const name = freshName();
    const mine = await add(tenant.owner.api, name);
    const theirs = await add(other.owner.api, name);
    dns.txt.set(mine.verification.name, [mine.verification.value, theirs.verification.value]);
    // when each sends ten checks at once
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? verify(tenant.owner.api, mine) : verify(other.owner.api, theirs))),
    );
    // then exactly one organization holds it, all of its checks succeed, and all of the other's are refused
    const rows = await server.base.db.domain.findMany({ where: { domain: name, verifiedAt: { not: null } } });
    expect(rows).toHaveLength(1);
    const winner = rows[0]!.id === mine.id ? mine : theirs;
    const counts = statusCounts(replies);
    expect(counts, JSON.stringify(counts)).toEqual({ 200: 10, '409 domain_taken': 10 });
    for (const [i, reply] of replies.entries()) {
      const asked = i % 2 ? mine : theirs;
      if (asked.id === winner.id) expect(reply.body).toMatchObject({ id: winner.id, verified: true });
      else expect(reply.body.error_description).toBe(`${name} is already verified by another organization`);
    }
    expect((await auditsOf('domain.verify', winner.id)).filter((e) => e.outcome === 'success')).toHaveLength(1);

    // and afterwards the other organization is still told it is taken, even with its record in place
    const loser = winner === mine ? theirs : mine;
    const loserApi = loser === mine ? tenant.owner.api : other.owner.api;
    expectRefusal(await verify(loserApi, loser), 409, 'domain_taken');
    expect((await server.base.db.domain.findUniqueOrThrow({ where: { id: loser.id } })).verifiedAt).toBeNull();
  }, 30_000);
});

describe('DELETE /api/v1/domains/{id}', () => {
  it('removes the domain, after which another organization may prove the name', async () => {
    // given a domain verified by the tenant, and claimed by the other organization too
    const name = freshName();
    const mine = await add(tenant.owner.api, name);
    const theirs = await add(other.owner.api, name);
    publish(mine);
    expect((await verify(tenant.owner.api, mine)).body.verified).toBe(true);
    dns.txt.set(mine.verification.name, [theirs.verification.value]);
    expectRefusal(await verify(other.owner.api, theirs), 409, 'domain_taken');

    // when a member, an admin, another organization's owner, then an owner try to delete it
    expectRefusal(await tenant.member.api.delete(`/api/v1/domains/${mine.id}`), 403, 'forbidden');
    expectRefusal(await tenant.admin.api.delete(`/api/v1/domains/${mine.id}`), 403, 'forbidden');
    expectRefusal(await other.owner.api.delete(`/api/v1/domains/${mine.id}`), 404, 'not_found');
    const deleted = await tenant.owner.api.delete(`/api/v1/domains/${mine.id}`);
    // then only the owner's removes it, for good
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(204);
    expect(await server.base.db.domain.findUnique({ where: { id: mine.id } })).toBeNull();
    expect(
      (await tenant.owner.api.get('/api/v1/domains?limit=100')).body.domains.map((d: DomainBody) => d.id),
    ).not.toContain(mine.id);
    expectRefusal(await tenant.owner.api.delete(`/api/v1/domains/${mine.id}`), 404, 'not_found');
    expectRefusal(await verify(tenant.owner.api, mine), 404, 'not_found');
    expect(await auditsOf('domain.delete', mine.id)).toEqual([
      expect.objectContaining({ outcome: 'success', details: { domain: name } }),
    ]);

    // and the other organization can now prove it
    expect((await verify(other.owner.api, theirs)).body.verified).toBe(true);
  });
});

describe('DNS_SERVERS', () => {
  const base = { SECRET_KEY: 'a'.repeat(64), DATA_DIR: '/tmp' };

  it('takes IPv4 and IPv6 addresses, with or without a port', async () => {
    const config = await loadConfig({ ...base, DNS_SERVERS: '1.1.1.1, 127.0.0.1:5353,::1,[::1]:53,[2001:db8::53]' });
    expect(config.dnsServers).toEqual(['1.1.1.1', '127.0.0.1:5353', '::1', '[::1]:53', '[2001:db8::53]']);
    expect((await loadConfig(base)).dnsServers).toBeUndefined();
  });

  it('stops the start with a clear message on a bad entry', async () => {
    for (const bad of [
      'dns.example.com',
      '1.1.1.1:0',
      '1.1.1.1:70000',
      '1.1.1',
      '::1:53x',
      '[1.1.1.1]:53',
      '1.1.1.1,,8.8.8.8',
      ' , ',
      'udp://1.1.1.1',
    ]) {
      await expect(loadConfig({ ...base, DNS_SERVERS: bad }), bad).rejects.toThrow(ConfigError);
    }
    await expect(loadConfig({ ...base, DNS_SERVERS: 'dns.example.com' })).rejects.toThrow(
      /DNS_SERVERS: "dns\.example\.com" is not an IP address/,
    );
  });
});
