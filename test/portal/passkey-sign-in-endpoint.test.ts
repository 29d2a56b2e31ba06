import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPasskeyServer } from '../helpers/webauthn.ts';
import type { TestServer } from '../helpers/server.ts';

// POST /login/passkey, the portal's last step of a passkey sign-in (PasskeySignIn.svelte posts the browser's answer
// as a form field): whatever arrives, the answer is a 4xx with a message, never a 500, and no session cookie.

let server: TestServer & { origin: string };

beforeAll(async () => {
  server = await startPasskeyServer();
}, 120_000);
afterAll(() => server?.stop());

function post(body: string, headers: Record<string, string> = {}) {
  const origin = new URL(server.url).origin;
  return fetch(`${server.url}/login/passkey`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin, ...headers },
    body,
  });
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const answer = (response: Record<string, unknown>) =>
  JSON.stringify({ id: 'AAAA', rawId: 'AAAA', type: 'public-key', clientExtensionResults: {}, response });

describe('POST /login/passkey', () => {
  const cases: [string, string][] = [
    ['no answer', form({})],
    ['an answer that is not JSON', form({ response: '{"id":' })],
    ['a JSON array', form({ response: '[]' })],
    ['null', form({ response: 'null' })],
    [
      'an answer with a NUL',
      form({ response: answer({ clientDataJSON: 'a\u0000b', authenticatorData: 'AA', signature: 'AA' }) }),
    ],
    [
      'an answer of 200 000 characters',
      form({ response: answer({ clientDataJSON: 'A'.repeat(200_000), authenticatorData: 'AA', signature: 'AA' }) }),
    ],
    [
      'an answer to no challenge',
      form({
        response: answer({
          clientDataJSON: Buffer.from('{"challenge":"nope","type":"webauthn.get"}').toString('base64url'),
          authenticatorData: 'AA',
          signature: 'AA',
        }),
      }),
    ],
    ['a return_to elsewhere with a bad answer', form({ response: '{}', return_to: 'https://evil.example/' })],
  ];
  for (const [what, body] of cases) {
    it(`answers ${what} with a 4xx and a message, and no session`, async () => {
      const reply = await post(body);
      expect(reply.status, await reply.clone().text()).toBeGreaterThanOrEqual(400);
      expect(reply.status).toBeLessThan(500);
      expect(reply.headers.get('set-cookie') ?? '').not.toContain('tessera_session=tss_');
      expect((await reply.json()).message).toEqual(expect.any(String));
    });
  }

  it('refuses a body that is not a form (415) and a post from another site (403)', async () => {
    expect((await post(JSON.stringify({ response: {} }), { 'content-type': 'application/json' })).status).toBe(415);
    expect((await post(form({ response: '{}' }), { origin: 'https://evil.example' })).status).toBe(403);
  });
});
