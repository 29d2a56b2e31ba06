// A SAML 2.0 identity provider for tests, built on samlify (the IdP side, which node-saml does not have): it reads
// the service provider's AuthnRequest as an IdP would (schema-validated with xmllint) and answers with a Response
// signed, or not, as a test asks: a good one, an unsigned one, one signed by another key, an expired one, one for
// another audience, recipient or request. Its RSA key and certificate are made with the system's openssl for each
// run, as https-receiver.ts makes its certificates.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as samlify from 'samlify';
import * as xmllint from '@authenio/samlify-node-xmllint';

samlify.setSchemaValidator(xmllint);

const NS_PROTOCOL = 'urn:oasis:names:tc:SAML:2.0:protocol';
const NS_ASSERTION = 'urn:oasis:names:tc:SAML:2.0:assertion';
export const SAML_STATUS = {
  success: 'urn:oasis:names:tc:SAML:2.0:status:Success',
  responder: 'urn:oasis:names:tc:SAML:2.0:status:Responder',
  authnFailed: 'urn:oasis:names:tc:SAML:2.0:status:AuthnFailed',
};
export const NAMEID_FORMAT = {
  email: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  unspecified: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
};
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

export interface SigningKey {
  key: string;
  /** PEM. */
  cert: string;
}

/** An RSA key and a self-signed certificate for it, valid for a day. */
export function makeSigningKey(commonName = 'Test IdP'): SigningKey {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tessera-saml-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${commonName}`,
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'pipe' },
    );
    return {
      key: readFileSync(path.join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An AuthnRequest as the IdP read it. */
export interface ReceivedRequest {
  id: string;
  issuer: string;
  acsUrl: string;
  destination: string;
  relayState: string | null;
  /** The query of the redirect, for the parameters beside SAMLRequest (login_hint). */
  query: URLSearchParams;
  /** The request's XML as sent. */
  xml: string;
}

/** What a Response answers and how; every field bends one thing, for the refusal tests. */
export interface ResponseOptions {
  /** The AuthnRequest's ID (SubjectConfirmationData and Response InResponseTo). */
  inResponseTo: string;
  /** The SP's ACS URL: Recipient and Destination unless these are given. */
  acsUrl: string;
  /** The SP's entity id: the Audience unless `audience` is given. */
  spEntityId: string;
  nameId?: string;
  nameIdFormat?: string;
  attributes?: Record<string, string | string[]>;
  /** What carries a signature: the assertion (the default), the response, both, or nothing. */
  sign?: 'assertion' | 'response' | 'both' | 'none';
  /** Sign with this key instead of the IdP's own. */
  signingKey?: SigningKey;
  audience?: string;
  /** Another AudienceRestriction after the first, naming only this audience. */
  alsoRestrictedTo?: string;
  /** Leave out the AudienceRestriction. */
  withoutAudienceRestriction?: boolean;
  recipient?: string;
  /** The Response's Destination; null leaves it out. */
  destination?: string | null;
  /** The Response's InResponseTo when it should differ from the assertion's; null leaves it out. */
  responseInResponseTo?: string | null;
  issuer?: string;
  /** The validity window of the conditions and of the bearer confirmation. */
  notBefore?: Date;
  notOnOrAfter?: Date;
  status?: string;
  statusDetail?: string;
  assertionId?: string;
  /** Leave out the AuthnStatement (an assertion that says nobody signed in). */
  withoutAuthnStatement?: boolean;
}

export interface TestSamlIdp {
  entityId: string;
  ssoUrl: string;
  key: SigningKey;
  /** The IdP's metadata XML (EntityDescriptor with its signing certificate and SSO URLs). */
  metadata: string;
  /** Reads the redirect URL a service provider sent the browser to. */
  readRequest(url: string, spMetadata: string): Promise<ReceivedRequest>;
  /** A base64 SAMLResponse, and the assertion's ID. */
  respond(options: ResponseOptions): Promise<{ samlResponse: string; assertionId: string; xml: string }>;
}

const escape = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const newId = () => `_${randomBytes(16).toString('hex')}`;

export function startSamlIdp(options: { entityId?: string; ssoUrl?: string; key?: SigningKey } = {}): TestSamlIdp {
  const entityId = options.entityId ?? 'https://idp.example.test/saml';
  const ssoUrl = options.ssoUrl ?? 'https://idp.example.test/sso';
  const key = options.key ?? makeSigningKey();
  const idp = samlify.IdentityProvider({
    entityID: entityId,
    privateKey: key.key,
    signingCert: key.cert,
    nameIDFormat: [NAMEID_FORMAT.email, NAMEID_FORMAT.persistent],
    singleSignOnService: [
      { Binding: REDIRECT, Location: ssoUrl },
      { Binding: POST, Location: ssoUrl },
    ],
  });

  async function readRequest(url: string, spMetadata: string): Promise<ReceivedRequest> {
    const query = new URL(url).searchParams;
    const sp = samlify.ServiceProvider({ metadata: spMetadata });
    const { extract, samlContent } = await idp.parseLoginRequest(sp, 'redirect', {
      query: { SAMLRequest: query.get('SAMLRequest'), RelayState: query.get('RelayState') },
    });
    const request = extract.request as Record<string, string>;
    return {
      id: request.id!,
      issuer: String(extract.issuer),
      acsUrl: request.assertionConsumerServiceUrl!,
      destination: request.destination!,
      relayState: query.get('RelayState'),
      query,
      xml: samlContent,
    };
  }

  async function respond(o: ResponseOptions) {
    const now = new Date();
    const notBefore = (o.notBefore ?? new Date(now.getTime() - 60_000)).toISOString();
    const notOnOrAfter = (o.notOnOrAfter ?? new Date(now.getTime() + 5 * 60_000)).toISOString();
    const issuer = escape(o.issuer ?? entityId);
    const assertionId = o.assertionId ?? newId();
    const status = o.status ?? SAML_STATUS.success;
    const destination = o.destination === undefined ? o.acsUrl : o.destination;
    const responseInResponseTo = o.responseInResponseTo === undefined ? o.inResponseTo : o.responseInResponseTo;
    const attributes = Object.entries(o.attributes ?? {})
      .map(
        ([name, value]) =>
          `<saml:Attribute Name="${escape(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:${name.includes(':') ? 'uri' : 'basic'}">${(Array.isArray(
            value,
          )
            ? value
            : [value]
          )
            .map((v) => `<saml:AttributeValue xsi:type="xs:string">${escape(v)}</saml:AttributeValue>`)
            .join('')}</saml:Attribute>`,
      )
      .join('');
    const assertion =
      `<saml:Assertion xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema" ID="${assertionId}" Version="2.0" IssueInstant="${now.toISOString()}">` +
      `<saml:Issuer>${issuer}</saml:Issuer>` +
      `<saml:Subject><saml:NameID Format="${escape(o.nameIdFormat ?? NAMEID_FORMAT.email)}">${escape(o.nameId ?? 'ada@example.test')}</saml:NameID>` +
      `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="${notOnOrAfter}" Recipient="${escape(o.recipient ?? o.acsUrl)}" InResponseTo="${escape(o.inResponseTo)}"/></saml:SubjectConfirmation></saml:Subject>` +
      `<saml:Conditions NotBefore="${notBefore}" NotOnOrAfter="${notOnOrAfter}">${(o.withoutAudienceRestriction ? [] : [o.audience ?? o.spEntityId, ...(o.alsoRestrictedTo ? [o.alsoRestrictedTo] : [])]).map((a) => `<saml:AudienceRestriction><saml:Audience>${escape(a)}</saml:Audience></saml:AudienceRestriction>`).join('')}</saml:Conditions>` +
      (o.withoutAuthnStatement
        ? ''
        : `<saml:AuthnStatement AuthnInstant="${now.toISOString()}" SessionIndex="${newId()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>`) +
      (attributes ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : '') +
      '</saml:Assertion>';
    let xml =
      `<samlp:Response xmlns:samlp="${NS_PROTOCOL}" xmlns:saml="${NS_ASSERTION}" ID="${newId()}" Version="2.0" IssueInstant="${now.toISOString()}"` +
      (destination === null ? '' : ` Destination="${escape(destination)}"`) +
      (responseInResponseTo === null ? '' : ` InResponseTo="${escape(responseInResponseTo)}"`) +
      '>' +
      `<saml:Issuer>${issuer}</saml:Issuer>` +
      `<samlp:Status><samlp:StatusCode Value="${status}">${o.statusDetail ? `<samlp:StatusCode Value="${o.statusDetail}"/>` : ''}</samlp:StatusCode></samlp:Status>` +
      (status === SAML_STATUS.success ? assertion : '') +
      '</samlp:Response>';

    const signer = o.signingKey ?? key;
    const sign = o.sign ?? 'assertion';
    // samlify takes the certificate's base64 body, as it reads it from metadata.
    const signature = {
      privateKey: signer.key,
      signingCert: signer.cert.replace(/-----[A-Z ]+-----|\s/g, ''),
      signatureAlgorithm: RSA_SHA256,
      isBase64Output: false,
    };
    if ((sign === 'assertion' || sign === 'both') && status === SAML_STATUS.success) {
      // The Signature goes right after the assertion's Issuer (SAML 2.0 Core 2.3.3's sequence).
      xml = samlify.SamlLib.constructSAMLSignature({
        ...signature,
        rawSamlMessage: xml,
        referenceTagXPath: "/*[local-name(.)='Response']/*[local-name(.)='Assertion']",
        signatureConfig: {
          prefix: 'ds',
          location: {
            reference: "/*[local-name(.)='Response']/*[local-name(.)='Assertion']/*[local-name(.)='Issuer']",
            action: 'after',
          },
        },
      });
    }
    if (sign === 'response' || sign === 'both') {
      xml = samlify.SamlLib.constructSAMLSignature({
        ...signature,
        rawSamlMessage: xml,
        isMessageSigned: true,
        signatureConfig: {
          prefix: 'ds',
          location: { reference: "/*[local-name(.)='Response']/*[local-name(.)='Issuer']", action: 'after' },
        },
      });
    }
    return { samlResponse: Buffer.from(xml, 'utf8').toString('base64'), assertionId, xml };
  }

  return { entityId, ssoUrl, key, metadata: idp.getMetadata(), readRequest, respond };
}

/** Checks a SAML protocol message against the SAML 2.0 schemas, as samlify does with what it receives (rejects when invalid; metadata is not covered). */
export const validateSamlSchema = (xml: string) => xmllint.validate(xml);
