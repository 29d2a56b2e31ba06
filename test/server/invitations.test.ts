import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../schema/lib/crypto.ts';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { DAY, MINUTE, movableClock } from '../helpers/clock.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';

const clock = movableClock();
let smtp: TestSmtp;
let server: TestServer;
let platform: Client;
let anonymous: Client;
let a: Tenant;
let b: Tenant;

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

beforeAll(async () => {
  smtp = await startTestSmtp();
  server = await startTestServer({ clock, role: 'all', env: { SMTP_URL: smtp.url } });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  anonymous = client(server.url);
  a = await createTenant(server.url, platform, 'Tenant A');
  b = await createTenant(server.url, platform, 'Tenant B');
});
afterAll(async () => {
  await server?.stop();
  await smtp?.close();
});

const newEmail = (label = 'invitee') => `${label}-${randomBytes(4).toString('hex')}@example.test`;
const invite = (as: Client, organizationId: string, body: Record<string, unknown>) =>
  as.post(`/v1/organizations/${organizationId}/invitations`, body);
const invitations = async (organizationId: string, as: Client = a.owner.api) =>
  (await as.get(`/v1/organizations/${organizationId}/invitations`)).body.invitations as any[];
const statusOf = async (organizationId: string, id: string) =>
  (await invitations(organizationId, platform)).find((i) => i.id === id)?.status;
const accept = (body: Record<string, unknown>, as: Client = anonymous) => as.post('/api/v1/invitations/accept', body);
const eventsOf = (organizationId: string, kind: string) =>
  server.base.db.event.findMany({ where: { organizationId, kind }, orderBy: { id: 'asc' } });
const auditOf = (organizationId: string, action: string) =>
  server.base.db.auditLog.findMany({ where: { organizationId, action } });
const resend = (as: Client, organizationId: string, invitationId: string) =>
  as.post(`/v1/organizations/${organizationId}/invitations/${invitationId}/resend`);
/** The accept links mailed to `email` once there are `count` invitation mails, oldest first. */
const acceptLinksMailedTo = async (email: string, count = 1) =>
  (await smtp.waitForMail(email, /^You are invited to /, count)).map((mail) =>
    smtp.linkIn(mail, '/invitations/accept'),
  );

describe('POST /v1/organizations/{id}/invitations', () => {
  it('returns 201 with a link to pass on (its token) and an expiry 7 days out', async () => {
    const email = newEmail('New.Person');
    const before = clock.now().getTime();

    const reply = await invite(a.admin.api, a.id, { email: email.toUpperCase(), role: 'admin' });

    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({
      id: expect.any(String),
      organization_id: a.id,
      email: email.toLowerCase(),
      role: 'admin',
      status: 'pending',
      invited_by: a.admin.id,
      expires_at: expect.any(String),
      created_at: expect.any(String),
      token: expect.stringMatching(/^tsi_/),
      accept_url: expect.any(String),
    });
    const expiresIn = Date.parse(reply.body.expires_at) - before;
    expect(expiresIn).toBeGreaterThanOrEqual(7 * DAY * 1000);
    expect(expiresIn).toBeLessThan((7 * DAY + MINUTE) * 1000);
    const link = new URL(reply.body.accept_url);
    expect(link.pathname).toBe('/invitations/accept');
    expect(link.searchParams.get('token')).toBe(reply.body.token);
  });

  it('writes member.invitation.sent and an audit entry, and defaults the role to member', async () => {
    const email = newEmail();

    const reply = await invite(a.admin.api, a.id, { email });

    expect(reply.status).toBe(201);
    expect(reply.body.role).toBe('member');
    const sent = (await eventsOf(a.id, 'member.invitation.sent')).map((e) => JSON.parse(e.body).data.invitation);
    expect(sent).toContainEqual({
      id: reply.body.id,
      email,
      role: 'member',
      invitedBy: a.admin.id,
      expiresAt: reply.body.expires_at,
    });
    expect(await auditOf(a.id, 'invitation.create')).toContainEqual(
      expect.objectContaining({
        actorId: a.admin.id,
        targetType: 'invitation',
        targetId: reply.body.id,
        details: { email, role: 'member' },
      }),
    );
  });

  it('answers 403 to a member, and to an admin inviting an owner; owners may invite owners', async () => {
    const byMember = await invite(a.member.api, a.id, { email: newEmail(), role: 'member' });
    const ownerByAdmin = await invite(a.admin.api, a.id, { email: newEmail(), role: 'owner' });
    const ownerByOwner = await invite(a.owner.api, a.id, { email: newEmail(), role: 'owner' });

    expect(byMember.status).toBe(403);
    expect(byMember.body.token).toBeUndefined();
    expect(ownerByAdmin.status).toBe(403);
    expect(ownerByAdmin.body.error).toBe('forbidden');
    expect(ownerByOwner.status).toBe(201);
  });

  it("answers 404 to another tenant's owner, and to a platform admin for an unknown organization", async () => {
    const email = newEmail();
    const fromB = await invite(b.owner.api, a.id, { email, role: 'member' });
    const unknown = await invite(platform, UNKNOWN_ID, { email, role: 'member' });

    expect(fromB.status).toBe(404);
    expect(fromB.body).toEqual({ error: 'not_found', error_description: 'Organization not found' });
    expect(unknown.status).toBe(404);
    expect((await invitations(a.id)).map((i) => i.email)).not.toContain(email);
  });

  it('lets a platform admin invite into any organization', async () => {
    const reply = await invite(platform, b.id, { email: newEmail(), role: 'owner' });

    expect(reply.status).toBe(201);
    expect(reply.body.organization_id).toBe(b.id);
  });

  it('answers 409 for someone who is already a member, whatever the case of the address', async () => {
    const reply = await invite(a.owner.api, a.id, { email: a.member.email.toUpperCase(), role: 'admin' });

    expect(reply.status).toBe(409);
    expect(reply.body.error).toBe('conflict');
  });

  it('answers 400 with details for a bad e-mail, an unknown role or an unknown field, and 401 without credentials', async () => {
    const badEmail = await invite(a.owner.api, a.id, { email: 'not-an-address', role: 'member' });
    expect(badEmail.status).toBe(400);
    expect(badEmail.body.details).toEqual([{ path: 'email', message: 'must be an e-mail address' }]);

    const badRole = await invite(a.owner.api, a.id, { email: newEmail(), role: 'superuser' });
    expect(badRole.status).toBe(400);
    expect(badRole.body.error).toBe('invalid_request');

    const extra = await invite(a.owner.api, a.id, {
      email: newEmail(),
      role: 'member',
      expires_at: '2099-01-01T00:00:00Z',
    });
    expect(extra.status).toBe(400);
    expect(extra.body.details).toEqual([expect.objectContaining({ path: 'expires_at' })]);

    expect((await invite(anonymous, a.id, { email: newEmail() })).status).toBe(401);
  });

  it('mails the invitee an accept link of its own, absolute from the issuer, and that link makes a verified account', async () => {
    const email = newEmail('mailed');

    const reply = await invite(a.admin.api, a.id, { email, role: 'admin' });

    expect(reply.status).toBe(201);
    const [mail] = await smtp.waitForMail(email, /^You are invited to Tenant A on Tessera$/);
    expect(mail!.text).toContain('admin invited you to join Tenant A as an admin.');
    const link = smtp.linkIn(mail!, '/invitations/accept');
    expect(link.origin).toBe(server.base.settings.issuer());
    expect(link.pathname).toBe(new URL(reply.body.accept_url).pathname);
    // The inviter never sees the mailed link: only the mailbox can prove the address.
    expect(link.searchParams.get('token')).not.toBe(reply.body.token);
    expect(mail!.text).not.toContain(reply.body.token);
    expect(mail!.html).toContain(`href="${link.href}"`);
    const accepted = await accept({ token: link.searchParams.get('token'), name: 'From The Mail', password: PASSWORD });
    expect(accepted.status).toBe(200);
    const me = await client(server.url, { token: accepted.body.token }).get('/api/v1/users/me');
    expect(me.body).toMatchObject({ email, email_verified: true, pending_email: null });
    expect(JSON.parse((await eventsOf(a.id, 'user.created')).at(-1)!.body).data.user).toMatchObject({
      email,
      emailVerified: true,
    });
  });

  it('replaces a pending invitation for the same address: the first token stops working', async () => {
    const email = newEmail();
    const first = await invite(a.admin.api, a.id, { email, role: 'admin' });
    const second = await invite(a.admin.api, a.id, { email, role: 'member' });
    expect([first.status, second.status]).toEqual([201, 201]);

    expect(await statusOf(a.id, first.body.id)).toBe('revoked');
    expect(await statusOf(a.id, second.body.id)).toBe('pending');
    const withFirst = await accept({ token: first.body.token, name: 'Replaced', password: PASSWORD });
    expect(withFirst.status).toBe(400);
    const withSecond = await accept({ token: second.body.token, name: 'Replaced', password: PASSWORD });
    expect(withSecond.status).toBe(200);
    expect(withSecond.body.organization).toEqual({ id: a.id, name: 'Tenant A', role: 'member' });
  });

  it('of 5 concurrent invitations of one address, leaves only one pending', async () => {
    const email = newEmail('invited-at-once');
    const replies = await Promise.all(
      Array.from({ length: 5 }, () => invite(a.admin.api, a.id, { email, role: 'member' })),
    );
    expect(replies.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    const statuses = await Promise.all(replies.map((r) => statusOf(a.id, r.body.id)));
    expect(statuses.filter((st) => st === 'pending')).toHaveLength(1);
    expect(statuses.filter((st) => st === 'revoked')).toHaveLength(4);
  });
});

describe('GET /v1/organizations/{id}/invitations', () => {
  it('lists the invitations with their status, never their tokens', async () => {
    const created = await invite(a.admin.api, a.id, { email: newEmail(), role: 'member' });

    const reply = await a.admin.api.get(`/v1/organizations/${a.id}/invitations`);

    expect(reply.status).toBe(200);
    const listed = reply.body.invitations.find((i: any) => i.id === created.body.id);
    const { token: _token, accept_url: _url, ...withoutSecrets } = created.body;
    expect(listed).toEqual(withoutSecrets);
    expect(reply.body.invitations.every((i: any) => i.organization_id === a.id && !('token' in i))).toBe(true);
  });

  it("answers 403 to a member, 404 to another tenant's owner and 404 to a platform admin for an unknown organization", async () => {
    const member = await a.member.api.get(`/v1/organizations/${a.id}/invitations`);
    const fromB = await b.owner.api.get(`/v1/organizations/${a.id}/invitations`);
    const unknown = await platform.get(`/v1/organizations/${UNKNOWN_ID}/invitations`);

    expect([member.status, fromB.status, unknown.status]).toEqual([403, 404, 404]);
    expect(fromB.body.invitations).toBeUndefined();
  });
});

describe('DELETE /v1/organizations/{id}/invitations/{invitation_id}', () => {
  it('revokes a pending invitation: 204, its token stops working, and an audit entry', async () => {
    const created = await invite(a.admin.api, a.id, { email: newEmail(), role: 'member' });

    const reply = await a.admin.api.delete(`/v1/organizations/${a.id}/invitations/${created.body.id}`);

    expect(reply.status).toBe(204);
    expect(await statusOf(a.id, created.body.id)).toBe('revoked');
    const used = await accept({ token: created.body.token, name: 'Too late', password: PASSWORD });
    expect(used.status).toBe(400);
    expect(used.body.details).toEqual([{ path: 'token', message: 'is not a valid invitation' }]);
    expect(await auditOf(a.id, 'invitation.revoke')).toContainEqual(
      expect.objectContaining({ actorId: a.admin.id, targetId: created.body.id }),
    );

    const again = await a.admin.api.delete(`/v1/organizations/${a.id}/invitations/${created.body.id}`);
    expect(again.status).toBe(409);
  });

  it("answers 404 for another tenant's invitation, by either path, and 403 to a member", async () => {
    const ofB = await invite(b.owner.api, b.id, { email: newEmail(), role: 'member' });
    const ofA = await invite(a.owner.api, a.id, { email: newEmail(), role: 'member' });

    const viaOwnOrg = await a.owner.api.delete(`/v1/organizations/${a.id}/invitations/${ofB.body.id}`);
    const viaTheirOrg = await a.owner.api.delete(`/v1/organizations/${b.id}/invitations/${ofB.body.id}`);
    const unknown = await a.owner.api.delete(`/v1/organizations/${a.id}/invitations/${UNKNOWN_ID}`);
    const byMember = await a.member.api.delete(`/v1/organizations/${a.id}/invitations/${ofA.body.id}`);

    expect([viaOwnOrg.status, viaTheirOrg.status, unknown.status, byMember.status]).toEqual([404, 404, 404, 403]);
    expect(await statusOf(b.id, ofB.body.id)).toBe('pending');
    expect(await statusOf(a.id, ofA.body.id)).toBe('pending');
  });
});

describe('POST /v1/organizations/{id}/invitations/{invitation_id}/resend', () => {
  it('mails a new link and answers like creating one; the old link stops working', async () => {
    const email = newEmail('resent');
    const created = await invite(a.admin.api, a.id, { email, role: 'member' });
    await acceptLinksMailedTo(email, 1);

    const reply = await resend(a.owner.api, a.id, created.body.id);

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expectMatchesOpenApi('POST', `/v1/organizations/${a.id}/invitations/${created.body.id}/resend`, reply);
    expect(reply.body).toEqual({
      ...created.body,
      expires_at: expect.any(String),
      token: expect.stringMatching(/^tsi_/),
      accept_url: expect.any(String),
    });
    expect(reply.body.token).not.toBe(created.body.token);
    expect(new URL(reply.body.accept_url).searchParams.get('token')).toBe(reply.body.token);
    const [first, link] = await acceptLinksMailedTo(email, 2);
    expect(link!.searchParams.get('token')).not.toBe(reply.body.token);
    expect(link!.href).not.toBe(first!.href);
    expect(link!.origin).toBe(server.base.settings.issuer());
    expect(
      (await eventsOf(a.id, 'member.invitation.sent')).filter(
        (e) => JSON.parse(e.body).data.invitation.id === created.body.id,
      ),
    ).toHaveLength(2);
    expect(await auditOf(a.id, 'invitation.resend')).toContainEqual(
      expect.objectContaining({ actorId: a.owner.id, targetId: created.body.id, details: { email } }),
    );

    // Both old links stop working: the one mailed and the one passed on.
    for (const old of [first!.searchParams.get('token'), created.body.token]) {
      const withOld = await accept({ token: old, name: 'Old Link', password: PASSWORD });
      expect(withOld.status).toBe(400);
      expect(withOld.body.details).toEqual([{ path: 'token', message: 'is not a valid invitation' }]);
    }
    const withNew = await accept({ token: link!.searchParams.get('token'), name: 'New Link', password: PASSWORD });
    expect(withNew.status).toBe(200);
    expect(withNew.body.organization).toEqual({ id: a.id, name: 'Tenant A', role: 'member' });
    expect(await statusOf(a.id, created.body.id)).toBe('accepted');
  });

  it('answers 409 for an invitation that is no longer pending: accepted, revoked or replaced', async () => {
    const accepted = await invite(a.admin.api, a.id, { email: newEmail(), role: 'member' });
    expect((await accept({ token: accepted.body.token, name: 'Done', password: PASSWORD })).status).toBe(200);
    const revoked = await invite(a.admin.api, a.id, { email: newEmail(), role: 'member' });
    expect((await a.admin.api.delete(`/v1/organizations/${a.id}/invitations/${revoked.body.id}`)).status).toBe(204);
    const email = newEmail();
    const replaced = await invite(a.admin.api, a.id, { email, role: 'member' });
    expect((await invite(a.admin.api, a.id, { email, role: 'admin' })).status).toBe(201);

    for (const created of [accepted, revoked, replaced]) {
      const reply = await resend(a.admin.api, a.id, created.body.id);
      expect(reply.status).toBe(409);
      expect(reply.body.error).toBe('conflict');
      expect(reply.body.token).toBeUndefined();
      expectMatchesOpenApi('POST', `/v1/organizations/${a.id}/invitations/${created.body.id}/resend`, reply);
    }
    expect(await statusOf(a.id, revoked.body.id)).toBe('revoked');
    expect(await auditOf(a.id, 'invitation.resend')).not.toContainEqual(
      expect.objectContaining({ targetId: revoked.body.id }),
    );
  });

  it("answers 404 for another organization's invitation, by either path, and 403 to a member; mails nothing", async () => {
    const emailB = newEmail('of-b');
    const ofB = await invite(b.owner.api, b.id, { email: emailB, role: 'member' });
    const ofA = await invite(a.owner.api, a.id, { email: newEmail(), role: 'member' });

    const viaOwnOrg = await resend(a.owner.api, a.id, ofB.body.id);
    const viaTheirOrg = await resend(a.owner.api, b.id, ofB.body.id);
    const unknown = await resend(a.owner.api, a.id, UNKNOWN_ID);
    const byMember = await resend(a.member.api, a.id, ofA.body.id);
    const byNobody = await resend(anonymous, a.id, ofA.body.id);

    expect([viaOwnOrg.status, viaTheirOrg.status, unknown.status, byMember.status, byNobody.status]).toEqual([
      404, 404, 404, 403, 401,
    ]);
    expect(viaOwnOrg.body).toEqual({ error: 'not_found', error_description: expect.any(String) });
    expect(byMember.body.token).toBeUndefined();
    // Both links still work; each invitee got one mail.
    await acceptLinksMailedTo(emailB, 1);
    expect(await server.base.db.mail.count({ where: { toAddress: emailB } })).toBe(1);
    expect((await accept({ token: ofB.body.token, name: 'Still Works', password: PASSWORD })).status).toBe(200);
    expect((await accept({ token: ofA.body.token, name: 'Still Works', password: PASSWORD })).status).toBe(200);
  });

  it('lets either the resend or the accept with the old link win when they race, never both', async () => {
    for (let round = 0; round < 3; round++) {
      const created = await invite(a.admin.api, a.id, { email: newEmail('race'), role: 'member' });

      const [resent, accepted] = await Promise.all([
        resend(a.admin.api, a.id, created.body.id),
        accept({ token: created.body.token, name: 'Racer', password: PASSWORD }),
      ]);

      expect(
        [
          [200, 400],
          [409, 200],
        ],
        `round ${round}`,
      ).toContainEqual([resent.status, accepted.status]);
      expect(await statusOf(a.id, created.body.id)).toBe(accepted.status === 200 ? 'accepted' : 'pending');
    }
  });
});

describe('invitation mails to one address', () => {
  it('are 10 an hour from one organization, created or resent (429 past them); other addresses and organizations go on', async () => {
    // given an address an organization has invited 4 times and resent to 6 times
    const email = newEmail('flooded');
    let last = await invite(a.owner.api, a.id, { email, role: 'member' });
    for (let i = 0; i < 3; i++) last = await invite(a.owner.api, a.id, { email, role: 'member' });
    for (let i = 0; i < 6; i++) {
      const resent = await resend(a.owner.api, a.id, last.body.id);
      expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    }
    expect(last.status).toBe(201);
    await acceptLinksMailedTo(email, 10);

    // when it invites the address again, or resends to it
    const again = await invite(a.admin.api, a.id, { email, role: 'member' });
    const resentAgain = await resend(a.owner.api, a.id, last.body.id);

    // then both are refused with 429 and Retry-After, and nothing more is written for the address
    for (const refused of [again, resentAgain]) {
      expect(refused.status, JSON.stringify(refused.body)).toBe(429);
      expect(refused.body.error).toBe('rate_limited');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expectMatchesOpenApi('POST', `/v1/organizations/${a.id}/invitations`, again);
    expectMatchesOpenApi('POST', `/v1/organizations/${a.id}/invitations/${last.body.id}/resend`, resentAgain);
    expect(await server.base.db.mail.count({ where: { toAddress: email, kind: 'invitation' } })).toBe(10);
    expect(await server.base.db.invitation.count({ where: { organizationId: a.id, email } })).toBe(4);
    // and the last link mailed still works
    expect(await statusOf(a.id, last.body.id)).toBe('pending');

    // while the organization invites another address, and another organization invites this one
    expect((await invite(a.owner.api, a.id, { email: newEmail('next'), role: 'member' })).status).toBe(201);
    expect((await invite(b.owner.api, b.id, { email, role: 'member' })).status).toBe(201);
    await acceptLinksMailedTo(email, 11);
  });
});

describe('POST /api/v1/invitations/accept', () => {
  it('needs a name and a 12+ character password to create the account, and leaves the invitation usable', async () => {
    const created = await invite(a.admin.api, a.id, { email: newEmail(), role: 'member' });

    const reply = await accept({ token: created.body.token, password: 'short' });

    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe('invalid_request');
    expect(reply.body.details).toEqual([
      { path: 'name', message: expect.any(String) },
      { path: 'password', message: expect.stringContaining('12') },
    ]);
    expect(await statusOf(a.id, created.body.id)).toBe('pending');
    expect((await accept({ token: created.body.token, name: 'Eleven', password: '12345678901' })).status).toBe(400);
    expect((await accept({ token: created.body.token, name: 'Twelve', password: '123456789012' })).status).toBe(200);
  });

  it('creates the account, joins the organization and returns the login payload', async () => {
    const email = newEmail();
    const created = await invite(a.admin.api, a.id, { email, role: 'admin' });

    const reply = await accept({ token: created.body.token, name: 'Ada Lovelace', password: PASSWORD });

    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      token: expect.stringMatching(/^tss_/),
      token_type: 'Bearer',
      expires_at: expect.any(String),
      user: { id: expect.any(String), email, name: 'Ada Lovelace' },
      organization: { id: a.id, name: 'Tenant A', role: 'admin' },
    });
    expect(reply.headers.get('set-cookie')).toMatch(/^tessera_session=tss_/);
    const session = await client(server.url, { token: reply.body.token }).get('/api/v1/auth/session');
    expect(session.body).toMatchObject({ user: { email }, organization: { id: a.id, role: 'admin' } });
    expect((await signIn(server.url, email, PASSWORD)).login.user.id).toBe(reply.body.user.id);
    expect(await statusOf(a.id, created.body.id)).toBe('accepted');
  });

  it('writes member.invitation.accepted, member.added and organization.member.added in the documented shapes', async () => {
    const email = newEmail();
    const created = await invite(a.admin.api, a.id, { email, role: 'member' });
    const reply = await accept({ token: created.body.token, name: 'Grace Hopper', password: PASSWORD });
    const user = { id: reply.body.user.id, email, name: 'Grace Hopper' };

    const [accepted] = await eventsOf(a.id, 'member.invitation.accepted').then((rows) =>
      rows.filter((e) => JSON.parse(e.body).data.invitation.id === created.body.id),
    );
    expect(JSON.parse(accepted!.body)).toEqual({
      id: accepted!.id,
      event: 'member.invitation.accepted',
      timestamp: accepted!.createdAt.toISOString(),
      organization: { id: a.id, name: 'Tenant A' },
      data: {
        invitation: { id: created.body.id, email, role: 'member', invitedBy: a.admin.id },
        user,
        organization: { id: a.id, name: 'Tenant A' },
      },
    });
    expect((await eventsOf(a.id, 'member.added')).map((e) => JSON.parse(e.body).data)).toContainEqual({
      organizationId: a.id,
      memberId: user.id,
      user,
      role: 'member',
    });
    expect((await eventsOf(a.id, 'organization.member.added')).map((e) => JSON.parse(e.body).data)).toContainEqual({
      organization_id: a.id,
      member_id: user.id,
      user,
      role: 'member',
    });
    const userCreated = await server.base.db.event.findMany({ where: { kind: 'user.created' } });
    expect(userCreated.map((e) => JSON.parse(e.body).data.user.id)).toContain(user.id);
    expect(await auditOf(a.id, 'invitation.accept')).toContainEqual(
      expect.objectContaining({ actorId: user.id, targetId: created.body.id }),
    );
  });

  it('refuses a used token with 400, even with other details', async () => {
    const created = await invite(a.admin.api, a.id, { email: newEmail(), role: 'member' });
    expect((await accept({ token: created.body.token, name: 'Once', password: PASSWORD })).status).toBe(200);

    const again = await accept({ token: created.body.token, name: 'Twice', password: 'another long password' });

    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error: 'invalid_request', details: [{ path: 'token' }] });
    expect(again.body.token).toBeUndefined();
  });

  it('lets only one of two simultaneous accepts through', async () => {
    const email = newEmail();
    const created = await invite(a.admin.api, a.id, { email, role: 'member' });

    const replies = await Promise.all([
      accept({ token: created.body.token, name: 'First', password: PASSWORD }),
      accept({ token: created.body.token, name: 'Second', password: PASSWORD }),
    ]);

    expect(replies.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(await server.base.db.user.count({ where: { email } })).toBe(1);
    expect(
      (await eventsOf(a.id, 'member.invitation.accepted')).filter(
        (e) => JSON.parse(e.body).data.invitation.id === created.body.id,
      ),
    ).toHaveLength(1);
  });

  it("answers the second of two organizations' concurrent accepts that both make the account 401, not 500", async () => {
    // given one new address invited by two organizations, and both invitations accepted at once to make the account
    const email = newEmail('twice');
    const [toA, toB] = await Promise.all([
      invite(a.admin.api, a.id, { email, role: 'member' }),
      invite(b.admin.api, b.id, { email, role: 'member' }),
    ]);

    const replies = await Promise.all([
      accept({ token: toA.body.token, name: 'Twice', password: PASSWORD }),
      accept({ token: toB.body.token, name: 'Twice', password: PASSWORD }),
    ]);

    // then one account is made; the other accept is told to sign in to it, and its invitation stays usable
    expect(replies.map((r) => r.status).sort(), JSON.stringify(replies.map((r) => r.body))).toEqual([200, 401]);
    expect(await server.base.db.user.count({ where: { email } })).toBe(1);
    const lost = replies[0].status === 200 ? toB : toA;
    expect(replies.find((r) => r.status === 401)!.body.error).toBe('invalid_credentials');
    expect(await statusOf(lost === toA ? a.id : b.id, lost.body.id)).toBe('pending');
  });

  it("lets one of 20 concurrent accepts with an existing account's password join, answers the rest 400, and makes them no session", async () => {
    // given a person of another organization, invited, whose 20 accepts with their password race
    const person = await addPerson(server.url, b.owner.api, b.id, 'member', 'racer');
    const created = await invite(a.admin.api, a.id, { email: person.email, role: 'member' });
    const sessionsBefore = await server.base.db.session.count({ where: { userId: person.id } });

    const replies = await Promise.all(
      Array.from({ length: 20 }, () => accept({ token: created.body.token, password: PASSWORD })),
    );

    // then one joins, in a session of the organization, and the others are told the invitation is used
    const joined = replies.filter((r) => r.status === 200);
    expect(joined).toHaveLength(1);
    expect(joined[0]!.body.organization).toEqual({ id: a.id, name: 'Tenant A', role: 'member' });
    expect(replies.filter((r) => r.status !== 200).map((r) => [r.status, r.body.details])).toEqual(
      Array(19).fill([400, [{ path: 'token', message: 'is not a valid invitation' }]]),
    );
    // and a sign-in that lost the claim made no session: the join is in the transaction that makes it
    expect(await server.base.db.session.count({ where: { userId: person.id } })).toBe(sessionsBefore + 1);
    expect(
      (await eventsOf(a.id, 'member.invitation.accepted')).filter(
        (e) => JSON.parse(e.body).data.invitation.id === created.body.id,
      ),
    ).toHaveLength(1);
  });

  it('lets either the revoke or the accept win when they race, never both', async () => {
    for (let round = 0; round < 3; round++) {
      const created = await invite(a.admin.api, a.id, { email: newEmail(), role: 'member' });

      const [revoked, accepted] = await Promise.all([
        a.admin.api.delete(`/v1/organizations/${a.id}/invitations/${created.body.id}`),
        accept({ token: created.body.token, name: 'Racer', password: PASSWORD }),
      ]);

      expect([
        [204, 400],
        [409, 200],
      ]).toContainEqual([revoked.status, accepted.status]);
      expect(await statusOf(a.id, created.body.id)).toBe(accepted.status === 200 ? 'accepted' : 'revoked');
    }
  });

  it('answers 400 for an unknown or a missing token', async () => {
    const unknown = await accept({ token: 'tsi_not-a-real-token', name: 'Nobody', password: PASSWORD });
    const missing = await accept({ name: 'Nobody', password: PASSWORD });

    expect([unknown.status, missing.status]).toEqual([400, 400]);
    expect(unknown.body.details).toEqual([{ path: 'token', message: 'is not a valid invitation' }]);
  });

  it('lets an existing account accept with its password, and refuses a wrong one', async () => {
    const created = await invite(a.admin.api, a.id, { email: b.member.email, role: 'member' });

    const wrong = await accept({ token: created.body.token, password: 'not the password at all' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_credentials');
    expect(await statusOf(a.id, created.body.id)).toBe('pending');

    const reply = await accept({ token: created.body.token, password: PASSWORD });
    expect(reply.status).toBe(200);
    expect(reply.body.user).toEqual({ id: b.member.id, email: b.member.email, name: 'member' });
    expect(reply.body.organization).toEqual({ id: a.id, name: 'Tenant A', role: 'member' });
    const orgs = await b.member.api.get('/api/v1/orgs');
    expect(orgs.body).toEqual(
      expect.arrayContaining([
        { id: b.id, name: 'Tenant B', role: 'member' },
        { id: a.id, name: 'Tenant A', role: 'member' },
      ]),
    );
  });

  it('slows down password guessing through an invitation like a sign-in, and audits the failures as sign-ins', async () => {
    // Whoever invites an address holds the token: without this, an admin could guess any account's password.
    const victim = await addPerson(server.url, b.owner.api, b.id, 'member', 'victim');
    const created = await invite(a.admin.api, a.id, { email: victim.email, role: 'member' });

    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await accept({ token: created.body.token, password: `guess number ${i}` })).status);
    const withRightPassword = await accept({ token: created.body.token, password: PASSWORD });

    expect(statuses.slice(0, 4)).toEqual([401, 401, 401, 401]);
    expect(withRightPassword.status).toBe(429);
    expect(Number(withRightPassword.headers.get('retry-after'))).toBeGreaterThan(0);
    // The same account lock as sign-in: a lock earned here holds there too.
    expect((await anonymous.post('/api/v1/auth/login', { email: victim.email, password: PASSWORD })).status).toBe(429);
    expect(await statusOf(a.id, created.body.id)).toBe('pending');
    // Accepting with a password is signing in: the failures are the account's failed sign-ins, platform events for
    // an account no organization manages, and never in the log of the organization that invited.
    const failures = await server.base.db.auditLog.findMany({ where: { outcome: 'failure', targetId: victim.id } });
    expect(failures.length).toBeGreaterThanOrEqual(4);
    expect(failures[0]).toMatchObject({
      action: 'auth.login',
      organizationId: null,
      targetType: 'user',
      details: { email: victim.email, reason: 'wrong_password' },
    });
    expect(failures.filter((f) => f.organizationId === a.id)).toEqual([]);
  });

  it('lets the signed-in invitee accept with the token alone, but not someone else signed in', async () => {
    const created = await invite(a.admin.api, a.id, { email: b.admin.email, role: 'admin' });

    const bySomeoneElse = await accept({ token: created.body.token }, a.member.api);
    expect(bySomeoneElse.status).toBe(401);
    expect(await statusOf(a.id, created.body.id)).toBe('pending');

    const reply = await accept({ token: created.body.token }, b.admin.api);
    expect(reply.status).toBe(200);
    expect(reply.body.user.id).toBe(b.admin.id);
    expect(reply.body.organization).toEqual({ id: a.id, name: 'Tenant A', role: 'admin' });
    // No password was given: the new session is no fresher a sign-in than the one it came from.
    const [current, issued] = await Promise.all([
      server.base.db.session.findFirstOrThrow({ where: { userId: b.admin.id, tokenHash: sha256(b.admin.token) } }),
      server.base.db.session.findFirstOrThrow({ where: { tokenHash: sha256(reply.body.token) } }),
    ]);
    expect(issued.authTime).toEqual(current.authTime);
  });

  it('creates the invited account, not the signed-in one, for an address without an account', async () => {
    const email = newEmail();
    const created = await invite(a.admin.api, a.id, { email, role: 'member' });

    const reply = await accept({ token: created.body.token, name: 'Fresh', password: PASSWORD }, b.owner.api);

    expect(reply.status).toBe(200);
    expect(reply.body.user.email).toBe(email);
    expect(reply.body.user.id).not.toBe(b.owner.id);
    expect((await b.owner.api.get(`/v1/organizations/${a.id}`)).status).toBe(404);
  });
});

// Moves the shared clock: keep this block last.
describe('invitation expiry', () => {
  it('accepts until 7 days have passed, then answers 400 and lists the invitation as expired', async () => {
    const early = await invite(a.admin.api, a.id, { email: newEmail('early'), role: 'member' });
    const late = await invite(a.admin.api, a.id, { email: newEmail('late'), role: 'member' });

    clock.advance(7 * DAY - MINUTE);
    expect((await accept({ token: early.body.token, name: 'Early', password: PASSWORD })).status).toBe(200);

    clock.advance(2 * MINUTE);
    const tooLate = await accept({ token: late.body.token, name: 'Late', password: PASSWORD });
    expect(tooLate.status).toBe(400);
    expect(tooLate.body.details).toEqual([{ path: 'token', message: 'is not a valid invitation' }]);

    // Sessions last 7 days too: the owner signs in again.
    const owner = (await signIn(server.url, a.owner.email, PASSWORD)).api;
    const listed = await invitations(a.id, owner);
    expect(listed.find((i) => i.id === late.body.id)?.status).toBe('expired');
    expect(listed.find((i) => i.id === early.body.id)?.status).toBe('accepted');
    expect((await owner.delete(`/v1/organizations/${a.id}/invitations/${late.body.id}`)).status).toBe(409);

    // A fresh invitation to the same address works.
    const renewed = await invite(owner, a.id, { email: late.body.email, role: 'member' });
    expect(renewed.status).toBe(201);
    expect((await accept({ token: renewed.body.token, name: 'Late', password: PASSWORD })).status).toBe(200);
  });

  it('renews the expiry on a resend to 7 days from then, and will not resend an expired invitation', async () => {
    // The test above moved the clock past the sessions of the setup: the owner signs in again, twice.
    let owner = (await signIn(server.url, a.owner.email, PASSWORD)).api;
    const renewed = await invite(owner, a.id, { email: newEmail('renewed'), role: 'member' });
    const lapsing = await invite(owner, a.id, { email: newEmail('lapsing'), role: 'member' });
    clock.advance(6 * DAY);
    const resentAt = clock.now().getTime();

    const reply = await resend(owner, a.id, renewed.body.id);

    expect(reply.status).toBe(200);
    const expiresIn = Date.parse(reply.body.expires_at) - resentAt;
    expect(expiresIn).toBeGreaterThanOrEqual(7 * DAY * 1000);
    expect(expiresIn).toBeLessThan((7 * DAY + MINUTE) * 1000);
    // Past the first expiry: the resent invitation is still pending, the other one expired and stays so.
    clock.advance(2 * DAY);
    owner = (await signIn(server.url, a.owner.email, PASSWORD)).api;
    const statusNow = async (id: string) => (await invitations(a.id, owner)).find((i) => i.id === id)?.status;
    expect(await statusNow(lapsing.body.id)).toBe('expired');
    const late = await resend(owner, a.id, lapsing.body.id);
    expect(late.status).toBe(409);
    expect((await accept({ token: lapsing.body.token, name: 'Lapsed', password: PASSWORD })).status).toBe(400);
    expect(await statusNow(renewed.body.id)).toBe('pending');
    expect((await accept({ token: reply.body.token, name: 'Renewed', password: PASSWORD })).status).toBe(200);
  });
});

// Runs after the expiry block has moved the shared clock (so it signs in again), and moves it further at its end.
describe('invitationPreview through POST /graphql', () => {
  const PREVIEW = `query Preview($token: String!) {
    invitationPreview(token: $token) { status organizationName inviterName email role expiresAt accountExists }
  }`;
  const preview = async (token: string, as: Client = anonymous) => {
    const reply = await as.post('/graphql', { query: PREVIEW, variables: { token } });
    expect(reply.status).toBe(200);
    expect(reply.body.errors).toBeUndefined();
    return reply.body.data.invitationPreview;
  };
  const NO_DETAILS = {
    organizationName: null,
    inviterName: null,
    email: null,
    role: null,
    expiresAt: null,
    accountExists: null,
  };
  let admin: Client;

  beforeAll(async () => {
    admin = (await signIn(server.url, a.admin.email, PASSWORD)).api;
  });

  it('tells anyone holding a pending invitation who invited which address, where, as what and until when', async () => {
    const email = newEmail();
    const created = await invite(admin, a.id, { email, role: 'admin' });

    const shown = await preview(created.body.token);

    expect(shown).toEqual({
      status: 'pending',
      organizationName: 'Tenant A',
      inviterName: 'admin',
      email,
      role: 'admin',
      expiresAt: created.body.expires_at,
      accountExists: false,
    });
  });

  it('says whether the invited address has an account, whoever asks', async () => {
    // Tenant B's owner has an account, and is no member of Tenant A.
    const created = await invite(admin, a.id, { email: b.owner.email, role: 'member' });
    expect(created.status).toBe(201);

    expect(await preview(created.body.token)).toMatchObject({
      status: 'pending',
      email: b.owner.email,
      accountExists: true,
    });
    expect(await preview(created.body.token, admin)).toMatchObject({ status: 'pending', accountExists: true });
  });

  it('gives only the status of an accepted or a revoked invitation', async () => {
    const used = await invite(admin, a.id, { email: newEmail(), role: 'member' });
    expect((await accept({ token: used.body.token, name: 'Used', password: PASSWORD })).status).toBe(200);
    const revoked = await invite(admin, a.id, { email: newEmail(), role: 'member' });
    expect((await admin.delete(`/v1/organizations/${a.id}/invitations/${revoked.body.id}`)).status).toBe(204);

    expect(await preview(used.body.token)).toEqual({ status: 'accepted', ...NO_DETAILS });
    expect(await preview(revoked.body.token)).toEqual({ status: 'revoked', ...NO_DETAILS });
  });

  it('answers null for a token that is not one: unknown, empty, over-long, or replaced by a resend', async () => {
    const created = await invite(admin, a.id, { email: newEmail(), role: 'member' });
    const resent = await admin.request('POST', `/v1/organizations/${a.id}/invitations/${created.body.id}/resend`);
    expect(resent.status).toBe(200);

    expect(await preview('tsi_not-a-real-token')).toBeNull();
    expect(await preview('')).toBeNull();
    expect(await preview(`tsi_${'x'.repeat(300)}`)).toBeNull();
    expect(await preview(created.body.token)).toBeNull();
    expect(await preview(resent.body.token)).toMatchObject({ status: 'pending', organizationName: 'Tenant A' });
  });

  it('names only the password when a new account gives a name and a short password', async () => {
    const created = await invite(admin, a.id, { email: newEmail(), role: 'member' });
    const ACCEPT = `mutation Accept($input: AcceptInvitationInput!) {
      acceptInvitation(input: $input) { __typename ... on UserError { code message details { path message } } }
    }`;
    const answer = async (input: Record<string, string>) =>
      (
        await anonymous.post('/graphql', {
          query: ACCEPT,
          variables: { input: { token: created.body.token, ...input } },
        })
      ).body.data.acceptInvitation;

    expect(await answer({ name: 'Shorty', password: 'elevenchars' })).toEqual({
      __typename: 'UserError',
      code: 'invalid_request',
      message: 'The password must be 12 to 256 characters',
      details: [{ path: 'password', message: 'must be 12 to 256 characters' }],
    });
    expect(await answer({ password: PASSWORD })).toMatchObject({
      message: 'The name is required to create the account',
      details: [{ path: 'name' }],
    });
    expect((await answer({})).details.map((d: { path: string }) => d.path)).toEqual(['name', 'password']);
    expect(await preview(created.body.token)).toMatchObject({ status: 'pending' });
  });

  it('gives only the status once the invitation has expired', async () => {
    const created = await invite(admin, a.id, { email: newEmail(), role: 'member' });

    clock.advance(7 * DAY + MINUTE);

    expect(await preview(created.body.token)).toEqual({ status: 'expired', ...NO_DETAILS });
  });
});
