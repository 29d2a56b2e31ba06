// An organization that requires a second factor keeps its members' last one: a passkey that is a member's only
// factor cannot be removed there (409), until the requirement is off (docs/architecture.md#second-factors).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn } from '../helpers/http.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { SoftPasskey, startPasskeyServer } from '../helpers/webauthn.ts';

let server: TestServer & { origin: string };
let tenant: Tenant;

beforeAll(async () => {
  server = await startPasskeyServer();
  tenant = await createTenant(server.url, (await signIn(server.url, ADMIN.email, ADMIN.password)).api);
});
afterAll(() => server?.stop());

describe("removing the owner's only passkey while the organization requires a second factor", () => {
  it('is refused with 409 naming the organization; once the requirement is off, it goes', async () => {
    const owner = tenant.owner.api;
    const key = new SoftPasskey({ origin: server.origin });
    const creation = await owner.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
    const registered = await owner.post('/api/v1/users/me/passkeys', {
      name: 'Only key',
      response: key.register(creation.body),
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expect((await owner.patch(`/v1/organizations/${tenant.id}`, { require_mfa: true })).status).toBe(200);

    const refused = await owner.delete(`/api/v1/users/me/passkeys/${registered.body.id}`, { password: PASSWORD });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error_description).toContain(tenant.name);
    expect((await owner.get('/api/v1/users/me/mfa')).body).toMatchObject({ passkeys: 1 });

    expect((await owner.patch(`/v1/organizations/${tenant.id}`, { require_mfa: false })).status).toBe(200);
    expect((await owner.delete(`/api/v1/users/me/passkeys/${registered.body.id}`, { password: PASSWORD })).status).toBe(
      204,
    );
  });
});
