// SAML 2.0 connections (schema/modules/sso/saml.protocol.ts) against a samlify identity provider: the AuthnRequest
// it reads, the Response it answers with and every way that answer can be wrong, the SP metadata it imports and
// the IdP metadata a connection is made from. Given a connection row in a real database (assertion ids are kept
// there), when the IdP answers, then the profile comes out or the refusal says what was wrong.
import { inflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as samlify from 'samlify';
import { createDb, type Db } from '../../schema/db.ts';
import { makeContext, type Context, type ContextBase } from '../../schema/context.ts';
import { uuidv7 } from '../../schema/lib/ids.ts';
import { ValidationError } from '../../schema/errors/index.ts';
import { acsUrl, metadataUrl, type LoadedConnection, type SsoRequestState } from '../../schema/modules/sso/protocol.ts';
import { parseIdpMetadata, samlProtocol, serviceProviderMetadata } from '../../schema/modules/sso/saml.protocol.ts';
import { SsoSignInError } from '../../schema/modules/sso/sso.errors.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { movableClock } from '../helpers/clock.ts';
import {
  makeSigningKey,
  NAMEID_FORMAT,
  SAML_STATUS,
  startSamlIdp,
  validateSamlSchema,
  type ResponseOptions,
  type TestSamlIdp,
} from '../helpers/saml-idp.ts';

let database: TestDatabase;
let db: Db;
const clock = movableClock();
const idp: TestSamlIdp = startSamlIdp();
const otherKey = makeSigningKey('Not the IdP');

function context(): Context {
  const base = {
    db,
    clock,
    settings: { issuer: () => 'https://tessera.test', production: false, secretKey: new Uint8Array(32) },
  } as unknown as ContextBase;
  return makeContext(base, null, { requestId: 'sso-saml', ip: null, userAgent: null });
}

/** A SAML connection to the test IdP, as sso.service.ts loads it, with its row. */
async function connection(overrides: Partial<LoadedConnection> = {}): Promise<LoadedConnection> {
  const loaded: LoadedConnection = {
    id: uuidv7(),
    organizationId: null,
    type: 'saml',
    name: 'Example IdP',
    enabled: true,
    defaultRole: 'member',
    requireSso: false,
    seatSubscriptionId: null,
    roleClaim: null,
    roleMap: null,
    issuer: null,
    clientId: null,
    clientSecret: null,
    scopes: [],
    entryPoint: idp.ssoUrl,
    idpEntityId: idp.entityId,
    idpCerts: [idp.key.cert],
    domains: ['example.test'],
    ...overrides,
  };
  const now = new Date();
  await db.ssoConnection.create({
    data: {
      id: loaded.id,
      type: 'saml',
      name: loaded.name,
      entryPoint: loaded.entryPoint,
      idpEntityId: loaded.idpEntityId,
      idpCerts: loaded.idpCerts,
      createdAt: now,
      updatedAt: now,
    },
  });
  return loaded;
}

/** A sign-in started through `conn`: the request the IdP received and the state the returning browser claims. */
async function started(conn: LoadedConnection) {
  const ctx = context();
  const state = `state-${uuidv7()}`;
  const departure = await samlProtocol.depart(ctx, conn, state, {});
  const received = await idp.readRequest(departure.url, serviceProviderMetadata(ctx, conn));
  const request: SsoRequestState = {
    id: state,
    codeVerifier: null,
    nonce: null,
    samlRequestId: departure.samlRequestId ?? null,
    returnTo: null,
    testedById: null,
  };
  const answer = (options: Partial<ResponseOptions> = {}) =>
    idp.respond({ inResponseTo: received.id, acsUrl: received.acsUrl, spEntityId: received.issuer, ...options });
  return { ctx, departure, received, request, answer };
}

async function refusal(promise: Promise<unknown>): Promise<SsoSignInError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SsoSignInError);
  return error as SsoSignInError;
}

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { maxConnections: 4 });
});
afterAll(async () => {
  await db?.$disconnect();
  await database?.drop();
});

describe('depart', () => {
  it('sends the browser to the entry point with an AuthnRequest by HTTP-Redirect, the state as RelayState', async () => {
    const conn = await connection({ entryPoint: `${idp.ssoUrl}?tenant=t1` });
    const ctx = context();
    const departure = await samlProtocol.depart(ctx, conn, 'the-state', { loginHint: 'ada@example.test' });
    const url = new URL(departure.url);
    expect(`${url.origin}${url.pathname}`).toBe(idp.ssoUrl);
    expect(url.searchParams.get('tenant')).toBe('t1');
    expect(url.searchParams.get('RelayState')).toBe('the-state');
    expect(url.searchParams.get('login_hint')).toBe('ada@example.test');
    // Not signed: there is no SP key.
    expect(url.searchParams.has('Signature')).toBe(false);
    const xml = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
    await validateSamlSchema(xml);
    expect(xml).toContain(`ID="${departure.samlRequestId}"`);
    expect(xml).not.toContain('RequestedAuthnContext');

    const received = await idp.readRequest(departure.url, serviceProviderMetadata(ctx, conn));
    expect(received).toMatchObject({
      id: departure.samlRequestId,
      issuer: metadataUrl(ctx, conn.id),
      acsUrl: acsUrl(ctx, conn.id),
      destination: conn.entryPoint,
      relayState: 'the-state',
    });
  });

  it('makes a new request id each time', async () => {
    const conn = await connection();
    const a = await samlProtocol.depart(context(), conn, 's1', {});
    const b = await samlProtocol.depart(context(), conn, 's2', {});
    expect(a.samlRequestId).toMatch(/^_[0-9a-f]{40}$/);
    expect(b.samlRequestId).not.toBe(a.samlRequestId);
  });
});

describe('arrive', () => {
  it('maps a signed assertion to the profile: NameID as subject and e-mail, display name, multi-valued role attribute', async () => {
    const conn = await connection({ roleClaim: 'groups' });
    const { ctx, request, answer } = await started(conn);
    const { samlResponse, xml } = await answer({
      nameId: 'ada@example.test',
      nameIdFormat: NAMEID_FORMAT.email,
      attributes: { displayName: 'Ada Lovelace', groups: ['engineering', 'admin'], department: 'Analytical Engines' },
    });
    await validateSamlSchema(xml);
    const profile = await samlProtocol.arrive(ctx, conn, request, { samlResponse });
    expect(profile).toEqual({
      subject: 'ada@example.test',
      email: 'ada@example.test',
      emailVerified: false,
      name: 'Ada Lovelace',
      roleValues: ['engineering', 'admin'],
      amr: [],
      claims: expect.objectContaining({
        displayName: 'Ada Lovelace',
        groups: ['engineering', 'admin'],
        department: 'Analytical Engines',
        nameID: 'ada@example.test',
        nameIDFormat: NAMEID_FORMAT.email,
        issuer: idp.entityId,
        sessionIndex: expect.any(String),
      }),
    });
  });

  it('maps an Entra ID attribute set: e-mail and names from the claim URIs, roles from the role claim, the UPN claim not taken as a name', async () => {
    const roleClaim = 'http://schemas.microsoft.com/ws/2008/06/identity/claims/role';
    const conn = await connection({ roleClaim });
    const { ctx, request, answer } = await started(conn);
    const { samlResponse } = await answer({
      nameId: 'AAAAAAAAAAAAAAAAAAAAAB3kPq_Xr7Z0oQb4Ykqf5nM',
      nameIdFormat: NAMEID_FORMAT.persistent,
      attributes: {
        'http://schemas.microsoft.com/identity/claims/tenantid': '72f988bf-86f1-41af-91ab-2d7cd011db47',
        'http://schemas.microsoft.com/identity/claims/objectidentifier': 'b8c2a7c4-6a2e-4f43-9d6e-0d1b7b9f3c11',
        'http://schemas.microsoft.com/identity/claims/displayname': 'Grace Hopper',
        'http://schemas.microsoft.com/identity/claims/identityprovider':
          'https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/',
        'http://schemas.microsoft.com/claims/authnmethodsreferences': [
          'http://schemas.microsoft.com/ws/2008/06/identity/authenticationmethod/password',
          'http://schemas.microsoft.com/claims/multipleauthn',
        ],
        'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname': 'Grace',
        'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname': 'Hopper',
        'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress': 'grace@example.test',
        'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name': 'grace.hopper@example.onmicrosoft.test',
        [roleClaim]: ['Admin', 'Reader'],
      },
    });
    const profile = await samlProtocol.arrive(ctx, conn, request, { samlResponse });
    expect(profile).toMatchObject({
      subject: 'AAAAAAAAAAAAAAAAAAAAAB3kPq_Xr7Z0oQb4Ykqf5nM',
      email: 'grace@example.test',
      emailVerified: false,
      name: 'Grace Hopper',
      roleValues: ['Admin', 'Reader'],
    });
    expect(profile.claims).toMatchObject({
      nameIDFormat: NAMEID_FORMAT.persistent,
      'http://schemas.microsoft.com/identity/claims/tenantid': '72f988bf-86f1-41af-91ab-2d7cd011db47',
    });
  });

  it('joins given name and surname when there is no display name, reads mail and a single-valued role, without case', async () => {
    const conn = await connection({ roleClaim: 'Role' });
    const { ctx, request, answer } = await started(conn);
    const { samlResponse } = await answer({
      nameId: 'opaque-123',
      nameIdFormat: NAMEID_FORMAT.unspecified,
      attributes: {
        FirstName: 'Katherine',
        LastName: 'Johnson',
        Mail: 'not an address',
        email: 'kj@example.test',
        role: 'admin',
      },
    });
    expect(await samlProtocol.arrive(ctx, conn, request, { samlResponse })).toMatchObject({
      subject: 'opaque-123',
      email: 'kj@example.test',
      name: 'Katherine Johnson',
      roleValues: ['admin'],
    });
  });

  it('gives no e-mail when neither the NameID nor an attribute is one, and no roles without a role claim', async () => {
    const conn = await connection();
    const { ctx, request, answer } = await started(conn);
    const { samlResponse } = await answer({
      nameId: 'ada',
      nameIdFormat: NAMEID_FORMAT.email,
      attributes: { groups: 'x' },
    });
    expect(await samlProtocol.arrive(ctx, conn, request, { samlResponse })).toMatchObject({
      subject: 'ada',
      email: null,
      name: null,
      roleValues: [],
    });
  });

  it('accepts a signed assertion inside a signed response, and a certificate among several (a rollover)', async () => {
    const conn = await connection({ idpCerts: [otherKey.cert, idp.key.cert] });
    const { ctx, request, answer } = await started(conn);
    const { samlResponse } = await answer({ sign: 'both' });
    expect((await samlProtocol.arrive(ctx, conn, request, { samlResponse })).subject).toBe('ada@example.test');
  });

  it('keeps the assertion id until the assertion expires, and refuses the same assertion twice', async () => {
    const conn = await connection();
    const { ctx, request, answer } = await started(conn);
    const notOnOrAfter = new Date(Date.now() + 4 * 60_000);
    const { samlResponse, assertionId } = await answer({ notOnOrAfter });
    await samlProtocol.arrive(ctx, conn, request, { samlResponse });
    const rows = await db.samlAssertion.findMany({ where: { connectionId: conn.id } });
    expect(rows).toEqual([
      { connectionId: conn.id, assertionId, expiresAt: new Date(Math.floor(notOnOrAfter.getTime()) + 2 * 60_000) },
    ]);

    const again = await refusal(samlProtocol.arrive(ctx, conn, request, { samlResponse }));
    expect(again).toMatchObject({ reason: 'invalid_response', message: 'This assertion was already used' });
  });

  it('lets two connections each use an assertion id once', async () => {
    const [a, b] = [await connection(), await connection()];
    const first = await started(a);
    const second = await started(b);
    const assertionId = `_shared${uuidv7().replace(/-/g, '')}`;
    await samlProtocol.arrive(first.ctx, a, first.request, {
      samlResponse: (await first.answer({ assertionId })).samlResponse,
    });
    await samlProtocol.arrive(second.ctx, b, second.request, {
      samlResponse: (await second.answer({ assertionId })).samlResponse,
    });
  });

  describe('refuses', () => {
    const cases: [
      string,
      Partial<ResponseOptions> | ((r: { request: SsoRequestState }) => Partial<ResponseOptions>),
      RegExp | string,
    ][] = [
      ['an unsigned assertion', { sign: 'none' }, 'The assertion was not signed'],
      ['a signed response around an unsigned assertion', { sign: 'response' }, 'The assertion was not signed'],
      [
        'an assertion signed by another key',
        { signingKey: otherKey },
        "The assertion's signature does not match the identity provider's certificate",
      ],
      [
        'an assertion and its response both signed by another key',
        { sign: 'both', signingKey: otherKey },
        "The assertion's signature does not match the identity provider's certificate",
      ],
      [
        'an expired assertion',
        { notBefore: new Date(Date.now() - 20 * 60_000), notOnOrAfter: new Date(Date.now() - 10 * 60_000) },
        'The assertion has expired',
      ],
      [
        'an assertion not valid yet',
        { notBefore: new Date(Date.now() + 10 * 60_000), notOnOrAfter: new Date(Date.now() + 20 * 60_000) },
        'The assertion is not valid yet (is a clock wrong?)',
      ],
      [
        'an assertion for another audience',
        { audience: 'https://other-sp.example.test/metadata' },
        'The assertion was meant for another service provider',
      ],
      [
        'an assertion for no audience (no AudienceRestriction)',
        { withoutAudienceRestriction: true },
        'The assertion was meant for another service provider',
      ],
      [
        'an assertion one of whose audience restrictions leaves us out',
        { alsoRestrictedTo: 'https://other-sp.example.test/metadata' },
        'The assertion was meant for another service provider',
      ],
      [
        'an assertion for another recipient',
        { recipient: 'https://other-sp.example.test/acs' },
        /^The assertion was meant for another address/,
      ],
      [
        'a response sent to another destination',
        { destination: 'https://other-sp.example.test/acs' },
        /^The SAML response was sent to another address/,
      ],
      [
        'an assertion answering another request',
        { inResponseTo: '_another-request', responseInResponseTo: null },
        'The assertion answers another sign-in request',
      ],
      [
        'a response answering another request',
        { responseInResponseTo: '_another-request' },
        'The SAML response answers another sign-in request',
      ],
      [
        'an assertion from another issuer',
        { issuer: 'https://evil.example.test/saml' },
        /issued by another identity provider/,
      ],
      ['an assertion that says nobody signed in', { withoutAuthnStatement: true }, /no AuthnStatement/],
    ];
    for (const [what, options, message] of cases) {
      it(what, async () => {
        const conn = await connection();
        const { ctx, request, answer } = await started(conn);
        const { samlResponse } = await answer(typeof options === 'function' ? options({ request }) : options);
        const error = await refusal(samlProtocol.arrive(ctx, conn, request, { samlResponse }));
        expect(error.reason).toBe('invalid_response');
        expect(error.message).toMatch(message);
        expect(await db.samlAssertion.count({ where: { connectionId: conn.id } })).toBe(0);
      });
    }

    it('an assertion that expired by the context clock (the IdP and Tessera disagreeing by more than the skew)', async () => {
      const conn = await connection();
      const { ctx, request, answer } = await started(conn);
      const { samlResponse } = await answer();
      clock.advance(10 * 60);
      try {
        expect((await refusal(samlProtocol.arrive(ctx, conn, request, { samlResponse }))).message).toBe(
          'The assertion has expired',
        );
      } finally {
        clock.reset();
      }
    });

    it('an unsolicited response (a sign-in started at the IdP)', async () => {
      const conn = await connection();
      const { ctx, request, answer } = await started(conn);
      const { samlResponse } = await answer();
      const error = await refusal(
        samlProtocol.arrive(ctx, conn, { ...request, samlRequestId: null }, { samlResponse }),
      );
      expect(error).toMatchObject({
        reason: 'invalid_response',
        message: 'The SAML response answers no sign-in started here',
      });
    });

    it('an IdP status other than Success, as idp_error naming the status', async () => {
      const conn = await connection();
      const { ctx, request, answer } = await started(conn);
      const { samlResponse } = await answer({
        status: SAML_STATUS.responder,
        statusDetail: SAML_STATUS.authnFailed,
        sign: 'none',
      });
      const error = await refusal(samlProtocol.arrive(ctx, conn, request, { samlResponse }));
      expect(error).toMatchObject({
        reason: 'idp_error',
        message: 'The identity provider did not sign you in (Responder / AuthnFailed)',
      });
    });

    it('a second assertion beside the signed one (signature wrapping)', async () => {
      const conn = await connection();
      const { ctx, request, answer } = await started(conn);
      const { xml } = await answer();
      const evil = xml
        .match(/<saml:Assertion[\s\S]*<\/saml:Assertion>/)![0]
        .replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, '')
        .replace(/ID="[^"]+"/, 'ID="_evil"')
        .replace('ada@example.test', 'eve@example.test');
      const wrapped = xml.replace('</samlp:Response>', `${evil}</samlp:Response>`);
      const error = await refusal(
        samlProtocol.arrive(ctx, conn, request, { samlResponse: Buffer.from(wrapped).toString('base64') }),
      );
      expect(error.message).toBe('The SAML response holds more than one assertion');
    });

    it('an unsigned assertion in place of the signed one, moved elsewhere (signature wrapping)', async () => {
      const conn = await connection();
      const { ctx, request, answer } = await started(conn);
      const { xml } = await answer();
      const signed = xml.match(/<saml:Assertion[\s\S]*<\/saml:Assertion>/)![0];
      const evil = signed
        .replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, '')
        .replace(/ID="[^"]+"/, 'ID="_evil"')
        .replace('ada@example.test', 'eve@example.test');
      const wrapped = xml.replace(signed, `<samlp:Extensions>${signed}</samlp:Extensions>${evil}`);
      const error = await refusal(
        samlProtocol.arrive(ctx, conn, request, { samlResponse: Buffer.from(wrapped).toString('base64') }),
      );
      expect(error.message).toBe('The assertion was not signed');
    });

    it('a signed assertion whose content was changed after signing', async () => {
      const conn = await connection();
      const { ctx, request, answer } = await started(conn);
      const { xml } = await answer({ attributes: { role: 'member' } });
      const changed = xml.replace('>member<', '>owner<');
      const error = await refusal(
        samlProtocol.arrive(ctx, conn, request, { samlResponse: Buffer.from(changed).toString('base64') }),
      );
      expect(error.message).toBe("The assertion's signature does not match the identity provider's certificate");
    });

    it('anything when the connection has no certificate', async () => {
      const conn = await connection({ idpCerts: [] });
      const { ctx, request, answer } = await started(conn);
      const { samlResponse } = await answer();
      expect((await refusal(samlProtocol.arrive(ctx, conn, request, { samlResponse }))).reason).toBe(
        'invalid_response',
      );
    });
  });

  describe('hostile input, each an invalid_response and never a crash', () => {
    const base64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
    const xxe =
      '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">&x;</samlp:Response>';
    const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ''};`.repeat(10)}">`).join('')}]><samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">&lol9;</samlp:Response>`;
    const inputs: [string, string | undefined, RegExp][] = [
      ['no SAMLResponse', undefined, /sent no SAML response/],
      ['an empty one', '', /sent no SAML response/],
      ['not base64', '%%% not base64 %%%', /not base64/],
      ['base64 with a stray character', `${base64('<a/>')}!`, /not base64/],
      ['300 KiB', 'A'.repeat(300 * 1024), /too large/],
      [
        'a NUL byte',
        base64('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">\u0000</samlp:Response>'),
        /NUL/,
      ],
      [
        'UTF-16',
        Buffer.from('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"/>', 'utf16le').toString(
          'base64',
        ),
        /NUL/,
      ],
      ['an external entity (XXE)', base64(xxe), /document type/],
      ['entity expansion (billion laughs)', base64(laughs), /document type/],
      ['a DOCTYPE in lower case', base64('<!doctype x><x/>'), /document type/],
      ['not XML', base64('hello, world'), /not well-formed XML/],
      [
        'unclosed XML',
        base64('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"><a>'),
        /not well-formed XML/,
      ],
      [
        'another SAML message',
        base64('<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="_1"/>'),
        /not a SAML 2.0 Response/,
      ],
      ['a Response in no namespace', base64('<Response/>'), /not a SAML 2.0 Response/],
      [
        'a Response without status',
        base64('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"/>'),
        /has no status/,
      ],
      [
        'a successful Response without assertion',
        base64(
          '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status></samlp:Response>',
        ),
        /holds no assertion/,
      ],
      [
        'an encrypted assertion',
        base64(
          '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status><saml:EncryptedAssertion/></samlp:Response>',
        ),
        /encrypted/,
      ],
    ];
    for (const [what, samlResponse, message] of inputs) {
      it(what, async () => {
        const conn = await connection();
        const { ctx, request } = await started(conn);
        const error = await refusal(samlProtocol.arrive(ctx, conn, request, { samlResponse }));
        expect(error.reason).toBe('invalid_response');
        expect(error.message).toMatch(message);
      });
    }

    it('a well-formed signed response with a DOCTYPE added', async () => {
      const conn = await connection();
      const { ctx, request, answer } = await started(conn);
      const { xml } = await answer();
      const error = await refusal(
        samlProtocol.arrive(ctx, conn, request, {
          samlResponse: Buffer.from(`<!DOCTYPE samlp:Response>${xml}`).toString('base64'),
        }),
      );
      expect(error.message).toMatch(/document type/);
    });

    it('line-wrapped base64 is read (some IdPs wrap at 76 characters)', async () => {
      const conn = await connection();
      const { ctx, request, answer } = await started(conn);
      const { samlResponse } = await answer();
      const wrapped = samlResponse.match(/.{1,76}/g)!.join('\r\n');
      expect((await samlProtocol.arrive(ctx, conn, request, { samlResponse: wrapped })).subject).toBe(
        'ada@example.test',
      );
    });
  });
});

describe('serviceProviderMetadata', () => {
  it('describes the SP: entity id, the ACS by HTTP-POST, e-mail NameIDs, signed assertions wanted; an IdP can import it', async () => {
    const conn = await connection();
    const ctx = context();
    const xml = serviceProviderMetadata(ctx, conn);
    expect(serviceProviderMetadata(ctx, conn)).toBe(xml);
    const sp = samlify.ServiceProvider({ metadata: xml });
    expect(sp.entityMeta.getEntityID()).toBe(metadataUrl(ctx, conn.id));
    expect(sp.entityMeta.getAssertionConsumerService('post')).toBe(acsUrl(ctx, conn.id));
    expect(sp.entityMeta.isWantAssertionsSigned()).toBe(true);
    expect(xml).toContain('<NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</NameIDFormat>');
    expect(xml).toContain('Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"');
  });
});

describe('parseIdpMetadata', () => {
  const pemBody = (pem: string) => pem.replace(/-----[A-Z ]+-----|\s/g, '');

  it("reads the test IdP's metadata: entity id, the HTTP-Redirect SSO URL, the signing certificate as PEM", () => {
    const parsed = parseIdpMetadata(idp.metadata);
    expect(parsed).toEqual({
      entityId: idp.entityId,
      entryPoint: idp.ssoUrl,
      certs: [expect.stringMatching(/^-----BEGIN CERTIFICATE-----\n/)],
    });
    expect(pemBody(parsed.certs[0]!)).toBe(pemBody(idp.key.cert));
  });

  const entra = (certs: string[], extra = '') => `<?xml version="1.0" encoding="utf-8"?>
<EntityDescriptor ID="_e0b3" entityID="https://sts.windows.net/72f988bf/" xmlns="urn:oasis:names:tc:SAML:2.0:metadata">
  <RoleDescriptor xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:fed="http://docs.oasis-open.org/wsfed/federation/200706" xsi:type="fed:SecurityTokenServiceType" protocolSupportEnumeration="http://docs.oasis-open.org/wsfed/federation/200706">
    <KeyDescriptor use="signing"><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>${pemBody(otherKey.cert)}</X509Certificate></X509Data></KeyInfo></KeyDescriptor>
  </RoleDescriptor>
  <IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    ${certs
      .map(
        (
          c,
        ) => `<KeyDescriptor use="signing"><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>
${pemBody(c)
  .match(/.{1,76}/g)!
  .join('\n')}
</X509Certificate></X509Data></KeyInfo></KeyDescriptor>`,
      )
      .join('\n    ')}
    <KeyDescriptor use="encryption"><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>${pemBody(otherKey.cert)}</X509Certificate></X509Data></KeyInfo></KeyDescriptor>
    <SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://login.microsoftonline.com/72f988bf/saml2"/>
    <SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://login.microsoftonline.com/72f988bf/saml2/post"/>
    <SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://login.microsoftonline.com/72f988bf/saml2"/>
  </IDPSSODescriptor>${extra}
</EntityDescriptor>`;

  it('reads Entra-style metadata: the IDPSSODescriptor only (not the WS-Federation role), signing keys only, two of them (a rollover), in order', () => {
    const next = makeSigningKey('Next');
    const parsed = parseIdpMetadata(entra([idp.key.cert, next.cert, idp.key.cert]));
    expect(parsed.entityId).toBe('https://sts.windows.net/72f988bf/');
    expect(parsed.entryPoint).toBe('https://login.microsoftonline.com/72f988bf/saml2');
    expect(parsed.certs.map(pemBody)).toEqual([pemBody(idp.key.cert), pemBody(next.cert)]);
  });

  it('reads an EntitiesDescriptor holding one entity', () => {
    const one = idp.metadata.replace(/^<\?xml[^>]*>/, '');
    expect(
      parseIdpMetadata(
        `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">${one}</md:EntitiesDescriptor>`,
      ).entityId,
    ).toBe(idp.entityId);
  });

  const problems: [string, string, RegExp][] = [
    ['empty', '  ', /empty/],
    ['not XML', 'hello', /not well-formed XML/],
    [
      'a DOCTYPE (XXE)',
      '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>',
      /document type/,
    ],
    ['a NUL', `${idp.metadata}\u0000`, /NUL/],
    [
      'two entities',
      `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">${idp.metadata.replace(/^<\?xml[^>]*>/, '').repeat(2)}</md:EntitiesDescriptor>`,
      /2 EntityDescriptors/,
    ],
    ['no EntityDescriptor', '<x/>', /no EntityDescriptor/],
    ['no entityID', '<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata"/>', /no entityID/],
    [
      'an SP and no IdP',
      '<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"><SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/></EntityDescriptor>',
      /no SAML 2.0 IDPSSODescriptor/,
    ],
    [
      'no HTTP-Redirect SSO',
      entra([]).replace(/<SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"[^>]*>/, ''),
      /HTTP-Redirect/,
    ],
    [
      'an SSO URL that is not a URL',
      entra([]).replace(
        'Location="https://login.microsoftonline.com/72f988bf/saml2"/>\n  </IDPSSODescriptor>',
        'Location="javascript:alert(1)"/>\n  </IDPSSODescriptor>',
      ),
      /not an https URL/,
    ],
    [
      'an SSO URL over plain http',
      entra([]).replace(
        'Location="https://login.microsoftonline.com/72f988bf/saml2"/>\n  </IDPSSODescriptor>',
        'Location="http://login.microsoftonline.com/72f988bf/saml2"/>\n  </IDPSSODescriptor>',
      ),
      /not an https URL/,
    ],
    ['no signing certificate', entra([]), /no signing certificate/],
    [
      'a certificate that is not one',
      entra(['-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----']),
      /not an X.509 certificate/,
    ],
    ['2 MiB', `<x>${'a'.repeat(2 * 1024 * 1024)}</x>`, /larger than 1 MiB/],
  ];
  for (const [what, xml, message] of problems) {
    it(`refuses ${what} with a ValidationError on metadata_xml`, () => {
      const error = (() => {
        try {
          parseIdpMetadata(xml);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details).toEqual([
        { path: 'metadata_xml', message: expect.stringMatching(message) },
      ]);
    });
  }
});
