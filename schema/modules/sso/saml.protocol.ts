// SAML 2.0 connections (docs/architecture.md#single-sign-on): Tessera is the service provider, the organization's
// identity provider signs assertions. @node-saml/node-saml writes the AuthnRequest and verifies XML signatures; the
// rest of the Web Browser SSO profile's checks (SAML 2.0 Profiles 4.1.4.2-4.1.4.3: status, destination, audience,
// the time conditions, the bearer confirmation's recipient and request, issuer, single use) are made here, on the
// signed assertion only.
import { randomBytes, X509Certificate } from 'node:crypto';
import { DOMParser } from '@xmldom/xmldom';
import { generateServiceProviderMetadata, SAML, ValidateInResponseTo } from '@node-saml/node-saml';
import type { Context } from '../../context.ts';
import { ValidationError } from '../../errors/index.ts';
import {
  acsUrl,
  metadataUrl,
  type LoadedConnection,
  type SsoProtocol,
  type SsoRequestState,
  type UpstreamProfile,
} from './protocol.ts';
import { SsoSignInError } from './sso.errors.ts';

const NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
};
const HTTP_REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';

/** The largest SAMLResponse read (base64 text): real ones are a few KiB; nothing larger reaches a parser. */
const MAX_RESPONSE_CHARS = 256 * 1024;
/** The largest IdP metadata document read: one entity's metadata is tens of KiB (Entra ID's about 25). */
const MAX_METADATA_CHARS = 1024 * 1024;
/** How far the identity provider's clock may be from ours, either way. */
const CLOCK_SKEW_MS = 2 * 60 * 1000;
/** Assertion IDs are xs:ID values the IdP makes up, usually 20-50 characters; a longer one is not stored. */
const MAX_ASSERTION_ID_CHARS = 256;

const refuse = (message: string) => new SsoSignInError('invalid_response', message);

// ---- the service provider as node-saml sees it -------------------------------------------------------------------

/**
 * node-saml throws plain Errors that differ only in their English text. What tells a signature that does not verify
 * from anything else is where the failure arose: node-saml reads the signed assertion (getSignedAssertion) only once
 * its signature verified against the connection's certificates.
 */
class ServiceProvider extends SAML {
  signatureVerified = false;

  protected override async getSignedAssertion(signedXml: string): Promise<string | null> {
    this.signatureVerified = true;
    return super.getSignedAssertion(signedXml);
  }
}

/** Our side of the connection: the SP entity id is the metadata URL, the one ACS takes HTTP-POST. */
function serviceProvider(
  ctx: Context,
  connection: LoadedConnection,
  options: { requestId?: string; certs?: string[] } = {},
): ServiceProvider {
  const { requestId } = options;
  return new ServiceProvider({
    issuer: metadataUrl(ctx, connection.id),
    // The audience and the time conditions are checked here (checkAssertion), so that each refusal is told apart by
    // where it arose rather than by node-saml's English messages; node-saml would read them with the machine's clock.
    audience: false,
    acceptedClockSkewMs: -1,
    callbackUrl: acsUrl(ctx, connection.id),
    entryPoint: connection.entryPoint ?? undefined,
    // node-saml requires certificates even to write a request; the request checks nothing with them.
    idpCert: options.certs ?? [],
    idpIssuer: connection.idpEntityId ?? undefined,
    // The request asks for no NameID format: an IdP set up for another (persistent, Entra ID's default) answers
    // InvalidNameIDPolicy to one it cannot make. The metadata still says which we prefer.
    identifierFormat: null,
    // No RequestedAuthnContext: node-saml's default asks for exactly PasswordProtectedTransport, which Entra ID
    // refuses (AADSTS75011) for a person who signed in with MFA, a passkey or Windows.
    disableRequestedAuthnContext: true,
    // A signed assertion is required; a signed Response around an unsigned assertion is not enough, and an
    // unsigned Response around a signed assertion is fine (what most IdPs send).
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: false,
    // The request id lives in the sign-in's row (sso_requests), not in node-saml's in-memory cache, which another
    // process would not share: checkConfirmation compares it.
    validateInResponseTo: ValidateInResponseTo.never,
    generateUniqueId: requestId ? () => requestId : undefined,
  });
}

// ---- depart: the AuthnRequest ------------------------------------------------------------------------------------

/**
 * An AuthnRequest by the HTTP-Redirect binding (SAML 2.0 Bindings 3.4), RelayState = the sign-in's id. It is not
 * signed: a connection has no SP key, and an AuthnRequest proves nothing the response relies on (Profiles 4.1.4.1
 * makes signing optional); what protects the sign-in is the signed assertion's InResponseTo, Recipient and
 * Audience, checked on the way back.
 */
async function depart(ctx: Context, connection: LoadedConnection, state: string, hints: { loginHint?: string }) {
  if (!connection.entryPoint) throw new Error(`SAML connection ${connection.id} has no single sign-on URL`);
  // An xs:ID (an NCName: not starting with a digit), as unguessable as the state.
  const samlRequestId = `_${randomBytes(20).toString('hex')}`;
  // login_hint is not SAML, but Entra ID, Okta and Google take it on the SSO URL to fill the user name; other IdPs
  // ignore query parameters they do not know.
  const additionalParams: Record<string, string> = hints.loginHint ? { login_hint: hints.loginHint } : {};
  const url = await serviceProvider(ctx, connection, { requestId: samlRequestId }).getAuthorizeUrlAsync(
    state,
    undefined,
    { additionalParams },
  );
  return { url, samlRequestId };
}

// ---- arrive: the Response, step by step --------------------------------------------------------------------------

/** The POSTed SAMLResponse as XML text (and its base64 without line breaks), refusing what no IdP sends before any parser sees it. */
function decodeResponse(samlResponse: string | undefined): { xml: string; base64: string } {
  if (typeof samlResponse !== 'string' || samlResponse.length === 0)
    throw refuse('The identity provider sent no SAML response');
  if (samlResponse.length > MAX_RESPONSE_CHARS) throw refuse('The SAML response is too large');
  // Some IdPs wrap the base64 at 76 characters (RFC 2045); anything else outside the alphabet is not base64.
  const compact = samlResponse.replace(/[\r\n\t ]/g, '');
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact))
    throw refuse('The SAML response is not base64');
  const xml = Buffer.from(compact, 'base64').toString('utf8');
  if (xml.includes('\u0000')) throw refuse('The SAML response holds a NUL character');
  // No SAML message has a DTD (SAML 2.0 Core 1.3: "MUST NOT contain a DOCTYPE"); refusing it outright keeps
  // entities (XXE, entity expansion) away from every parser below.
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw refuse('The SAML response declares a document type, which is not allowed');
  return { xml, base64: compact };
}

/** The XML as a DOM, or null when it is not well-formed (xmldom reports and recovers; a report is a refusal). */
function parseXml(xml: string): Document | null {
  let failed = false;
  const fail = () => {
    failed = true;
  };
  try {
    const doc = new DOMParser({
      locator: {},
      errorHandler: { warning: () => {}, error: fail, fatalError: fail },
    }).parseFromString(xml, 'text/xml');
    return failed || !doc?.documentElement ? null : doc;
  } catch {
    return null;
  }
}

const childElements = (parent: Element, ns: string, localName: string): Element[] =>
  Array.from(parent.childNodes).filter(
    (n): n is Element =>
      n.nodeType === 1 && (n as Element).localName === localName && (n as Element).namespaceURI === ns,
  );
const firstChild = (parent: Element, ns: string, localName: string): Element | undefined =>
  childElements(parent, ns, localName)[0];
const attribute = (element: Element | undefined, name: string): string | null =>
  element?.hasAttribute(name) ? element.getAttribute(name) : null;
const text = (element: Element | undefined): string | null => element?.textContent?.trim() || null;

/** The outer Response: not signed itself in most cases, so only read for refusals, never for what it grants. */
interface OuterResponse {
  destination: string | null;
  inResponseTo: string | null;
  issuer: string | null;
  statusCodes: string[];
  assertions: Element[];
  encryptedAssertions: number;
}

function readResponse(xml: string): OuterResponse {
  const doc = parseXml(xml);
  if (!doc) throw refuse('The SAML response is not well-formed XML');
  const root = doc.documentElement;
  if (root.localName !== 'Response' || root.namespaceURI !== NS.protocol)
    throw refuse('The SAML response is not a SAML 2.0 Response');
  // The top-level StatusCode and the ones nested in it (Core 3.2.2.2).
  const statusCodes: string[] = [];
  const status = firstChild(root, NS.protocol, 'Status');
  for (
    let code = status && firstChild(status, NS.protocol, 'StatusCode');
    code;
    code = firstChild(code, NS.protocol, 'StatusCode')
  ) {
    statusCodes.push(attribute(code, 'Value') ?? '');
  }
  return {
    destination: attribute(root, 'Destination'),
    inResponseTo: attribute(root, 'InResponseTo'),
    issuer: text(firstChild(root, NS.assertion, 'Issuer')),
    statusCodes,
    assertions: childElements(root, NS.assertion, 'Assertion'),
    encryptedAssertions: childElements(root, NS.assertion, 'EncryptedAssertion').length,
  };
}

/** Anything but Success is the IdP declining (Core 3.2.2.2); the second-level code says why, and is safe to show. */
function checkStatus(response: OuterResponse): void {
  const [top, detail] = response.statusCodes;
  if (top === SUCCESS) return;
  if (top === undefined) throw refuse('The SAML response has no status');
  const name = (uri: string | undefined) =>
    (uri ?? '')
      .replace(/^.*:/, '')
      .replace(/[^A-Za-z]/g, '')
      .slice(0, 60);
  const why = [name(top), name(detail)].filter(Boolean).join(' / ') || 'no status';
  throw new SsoSignInError('idp_error', `The identity provider did not sign you in (${why})`);
}

/** What the outer Response says about where it goes and what it answers must agree with this sign-in. */
function checkAddressing(
  ctx: Context,
  connection: LoadedConnection,
  request: SsoRequestState,
  response: OuterResponse,
): void {
  if (response.encryptedAssertions > 0) {
    throw refuse(
      'The assertion is encrypted, which this connection does not support: turn off assertion encryption at the identity provider',
    );
  }
  const [assertion] = response.assertions;
  if (!assertion) throw refuse('The SAML response holds no assertion');
  if (response.assertions.length > 1) throw refuse('The SAML response holds more than one assertion');
  // A signed Response alone is not enough: the assertion carries its own signature (checked by node-saml).
  if (!firstChild(assertion, NS.dsig, 'Signature')) throw refuse('The assertion was not signed');
  // Core 3.2.2: a Destination present must be where it arrived (node-saml does not compare it).
  if (response.destination !== null && response.destination !== acsUrl(ctx, connection.id)) {
    throw refuse("The SAML response was sent to another address than this connection's assertion consumer service");
  }
  // Unsolicited responses (IdP-initiated sign-in) are not accepted: nothing ties one to a sign-in started here, so
  // anyone holding a valid assertion could sign a victim's browser in as someone else (login CSRF).
  if (!request.samlRequestId) throw refuse('The SAML response answers no sign-in started here');
  if (response.inResponseTo !== null && response.inResponseTo !== request.samlRequestId)
    throw refuse('The SAML response answers another sign-in request');
  if (connection.idpEntityId && response.issuer !== null && response.issuer !== connection.idpEntityId) {
    throw refuse('The SAML response was issued by another identity provider');
  }
}

/**
 * node-saml's verdict: the assertion's signature against the connection's certificates; only its signed bytes are
 * read from here on. Anything else node-saml refuses is a response it could not read.
 */
async function verifySignedAssertion(ctx: Context, connection: LoadedConnection, base64: string): Promise<string> {
  if (connection.idpCerts.length === 0)
    throw refuse('The connection has no identity provider certificate to check the assertion with');
  const verifier = serviceProvider(ctx, connection, { certs: connection.idpCerts });
  try {
    const { profile } = await verifier.validatePostResponseAsync({ SAMLResponse: base64 });
    const signed = profile?.getAssertionXml?.();
    if (!signed) throw refuse('The SAML response holds no assertion');
    return signed;
  } catch (error) {
    if (error instanceof SsoSignInError) throw error;
    if (!verifier.signatureVerified)
      throw refuse("The assertion's signature does not match the identity provider's certificate");
    throw refuse('The SAML response could not be validated');
  }
}

/** The signed assertion, read with our own parser: node-saml's profile lets an attribute stand in for a missing NameID. */
interface SignedAssertion {
  id: string;
  issuer: string | null;
  nameId: string;
  nameIdFormat: string | null;
  sessionIndex: string | null;
  /** When the assertion stops being usable: the earliest NotOnOrAfter of its conditions and bearer confirmation. */
  expiresAt: Date;
  attributes: Record<string, string | string[]>;
}

const instant = (value: string | null, what: string): Date | null => {
  if (value === null) return null;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw refuse(`The assertion's ${what} is not a date`);
  return new Date(ms);
};

/** Whether now is inside [notBefore, notOnOrAfter), with the skew either side (Core 2.5.1.2). */
function checkWindow(now: Date, notBefore: Date | null, notOnOrAfter: Date | null): void {
  if (notBefore && now.getTime() + CLOCK_SKEW_MS < notBefore.getTime())
    throw refuse('The assertion is not valid yet (is a clock wrong?)');
  if (notOnOrAfter && now.getTime() - CLOCK_SKEW_MS >= notOnOrAfter.getTime())
    throw refuse('The assertion has expired');
}

/**
 * Profiles 4.1.4.2: a bearer SubjectConfirmation whose data names our ACS as Recipient, answers our request and
 * has not expired. node-saml reads these only when it keeps the request ids itself, and never the Recipient.
 */
function checkConfirmation(
  ctx: Context,
  connection: LoadedConnection,
  request: SsoRequestState,
  subject: Element,
): Date {
  const bearers = childElements(subject, NS.assertion, 'SubjectConfirmation').filter(
    (c) => attribute(c, 'Method') === BEARER,
  );
  if (bearers.length === 0) throw refuse('The assertion has no bearer subject confirmation');
  // Each bearer either answers or is refused; the first refusal is the one told.
  let refusal: unknown;
  for (const confirmation of bearers) {
    try {
      const data = firstChild(confirmation, NS.assertion, 'SubjectConfirmationData');
      if (attribute(data, 'Recipient') !== acsUrl(ctx, connection.id)) {
        throw refuse(
          "The assertion was meant for another address (its Recipient is not this connection's assertion consumer service)",
        );
      }
      if (attribute(data, 'InResponseTo') !== request.samlRequestId)
        throw refuse('The assertion answers another sign-in request');
      const notOnOrAfter = instant(attribute(data, 'NotOnOrAfter'), 'NotOnOrAfter');
      if (!notOnOrAfter) throw refuse('The assertion has no expiry (NotOnOrAfter) in its subject confirmation');
      checkWindow(ctx.clock.now(), instant(attribute(data, 'NotBefore'), 'NotBefore'), notOnOrAfter);
      return notOnOrAfter;
    } catch (error) {
      refusal ??= error;
    }
  }
  throw refusal;
}

function readAttributes(assertion: Element): Record<string, string | string[]> {
  const attributes = Object.create(null) as Record<string, string | string[]>;
  for (const statement of childElements(assertion, NS.assertion, 'AttributeStatement')) {
    for (const element of childElements(statement, NS.assertion, 'Attribute')) {
      const name = attribute(element, 'Name');
      if (!name) continue;
      const values = childElements(element, NS.assertion, 'AttributeValue')
        .map((v) => v.textContent?.trim() ?? '')
        .filter(Boolean);
      if (values.length === 0) continue;
      const before = attributes[name];
      const all = before === undefined ? values : [...(Array.isArray(before) ? before : [before]), ...values];
      const [only] = all;
      attributes[name] = all.length === 1 && only !== undefined ? only : all;
    }
  }
  return attributes;
}

/**
 * Core 2.5.1.4: every AudienceRestriction must name us (our metadata URL, the SP entity id), and there must be one:
 * an assertion for no one in particular could be replayed here from any other service provider.
 */
function checkAudience(ctx: Context, connection: LoadedConnection, conditions: Element | undefined): void {
  if (!conditions) throw refuse('The SAML response could not be validated');
  const restrictions = childElements(conditions, NS.assertion, 'AudienceRestriction');
  const ours = metadataUrl(ctx, connection.id);
  const namesUs = (restriction: Element) =>
    childElements(restriction, NS.assertion, 'Audience').some((audience) => audience.textContent === ours);
  if (restrictions.length === 0 || !restrictions.every(namesUs))
    throw refuse('The assertion was meant for another service provider');
}

/** The assertion node-saml verified: who it names, for whom, until when. */
function checkAssertion(
  ctx: Context,
  connection: LoadedConnection,
  request: SsoRequestState,
  signedXml: string,
): SignedAssertion {
  const doc = parseXml(signedXml);
  const assertion = doc?.documentElement;
  if (!assertion || assertion.localName !== 'Assertion' || assertion.namespaceURI !== NS.assertion)
    throw refuse('The SAML response holds no assertion');
  const id = attribute(assertion, 'ID');
  if (!id || id.length > MAX_ASSERTION_ID_CHARS) throw refuse('The assertion has no usable ID');
  // node-saml compares the issuer only in logout messages.
  const issuer = text(firstChild(assertion, NS.assertion, 'Issuer'));
  if (connection.idpEntityId && issuer !== connection.idpEntityId)
    throw refuse('The assertion was issued by another identity provider');
  const subject = firstChild(assertion, NS.assertion, 'Subject');
  const nameIdElement = subject && firstChild(subject, NS.assertion, 'NameID');
  const nameId = text(nameIdElement);
  if (!subject || !nameId) throw refuse('The assertion names no subject (NameID)');
  const confirmedUntil = checkConfirmation(ctx, connection, request, subject);
  const conditions = firstChild(assertion, NS.assertion, 'Conditions');
  const conditionsUntil = instant(attribute(conditions, 'NotOnOrAfter'), 'NotOnOrAfter');
  checkWindow(ctx.clock.now(), instant(attribute(conditions, 'NotBefore'), 'NotBefore'), conditionsUntil);
  checkAudience(ctx, connection, conditions);
  // Profiles 4.1.4.2: an assertion for Web Browser SSO says the person authenticated; one that does not (a mere
  // attribute assertion) signs nobody in.
  const authn = firstChild(assertion, NS.assertion, 'AuthnStatement');
  if (!authn) throw refuse('The assertion does not say that anyone signed in (no AuthnStatement)');
  const until = conditionsUntil && conditionsUntil < confirmedUntil ? conditionsUntil : confirmedUntil;
  return {
    id,
    issuer,
    nameId,
    nameIdFormat: attribute(nameIdElement, 'Format'),
    sessionIndex: attribute(authn, 'SessionIndex'),
    expiresAt: new Date(until.getTime() + CLOCK_SKEW_MS),
    attributes: readAttributes(assertion),
  };
}

/** Profiles 4.1.4.5: a bearer assertion is used once. Its id is kept until it would have expired anyway. */
async function refuseReplay(ctx: Context, connection: LoadedConnection, assertion: SignedAssertion): Promise<void> {
  const inserted = await ctx.db.$executeRaw`
    insert into saml_assertions (connection_id, assertion_id, expires_at)
    values (${connection.id}, ${assertion.id}, ${assertion.expiresAt}::timestamp(3))
    on conflict do nothing`;
  if (inserted === 0) throw refuse('This assertion was already used');
}

// ---- the profile -------------------------------------------------------------------------------------------------

// Attribute names as IdPs send them, compared without case: plain LDAP-ish names (Okta, Google Workspace, OneLogin
// as their admins name them), the WS-Federation claim URIs (Entra ID, AD FS) and the eduPerson OIDs (Shibboleth).
const EMAIL_NAMES = [
  'email',
  'mail',
  'emailaddress',
  'user.email',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  'http://schemas.xmlsoap.org/claims/emailaddress',
  'urn:oid:0.9.2342.19200300.100.1.3',
];
// Not .../claims/name: Entra ID puts the user principal name there, not a name to show.
const NAME_NAMES = [
  'displayname',
  'name',
  'fullname',
  'http://schemas.microsoft.com/identity/claims/displayname',
  'urn:oid:2.16.840.1.113730.3.1.241',
];
const GIVEN_NAMES = [
  'givenname',
  'firstname',
  'first_name',
  'user.firstname',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname',
  'urn:oid:2.5.4.42',
];
const SURNAMES = [
  'sn',
  'surname',
  'lastname',
  'last_name',
  'familyname',
  'user.lastname',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname',
  'urn:oid:2.5.4.4',
];

const looksLikeEmail = (value: string) => value.length <= 320 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value);
const valuesOf = (value: string | string[] | undefined): string[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

function firstValue(
  attributes: Record<string, string | string[]>,
  names: string[],
  accept: (v: string) => boolean = () => true,
): string | null {
  const byName = new Map(Object.entries(attributes).map(([k, v]) => [k.toLowerCase(), v]));
  for (const name of names) {
    const found = valuesOf(byName.get(name)).find(accept);
    if (found) return found;
  }
  return null;
}

function toProfile(connection: LoadedConnection, assertion: SignedAssertion): UpstreamProfile {
  const { attributes } = assertion;
  const email =
    assertion.nameIdFormat === EMAIL_FORMAT && looksLikeEmail(assertion.nameId)
      ? assertion.nameId
      : firstValue(attributes, EMAIL_NAMES, looksLikeEmail);
  const given = firstValue(attributes, GIVEN_NAMES);
  const surname = firstValue(attributes, SURNAMES);
  const name = firstValue(attributes, NAME_NAMES) ?? ([given, surname].filter(Boolean).join(' ') || null);
  const { roleClaim } = connection;
  const role = roleClaim
    ? (attributes[roleClaim] ??
      Object.entries(attributes).find(([k]) => k.toLowerCase() === roleClaim.toLowerCase())?.[1])
    : undefined;
  return {
    subject: assertion.nameId,
    email,
    // A SAML IdP says nothing about verification; the organization's verified domain vouches (sso.service.ts).
    emailVerified: false,
    name: name ? name.slice(0, 200) : null,
    roleValues: valuesOf(role),
    amr: [],
    claims: {
      ...Object.fromEntries(Object.entries(attributes)),
      nameID: assertion.nameId,
      nameIDFormat: assertion.nameIdFormat,
      issuer: assertion.issuer,
      sessionIndex: assertion.sessionIndex,
    },
  };
}

async function arrive(
  ctx: Context,
  connection: LoadedConnection,
  request: SsoRequestState,
  answer: { samlResponse?: string },
): Promise<UpstreamProfile> {
  const { xml, base64 } = decodeResponse(answer.samlResponse);
  const response = readResponse(xml);
  checkStatus(response);
  checkAddressing(ctx, connection, request, response);
  const signedXml = await verifySignedAssertion(ctx, connection, base64);
  const assertion = checkAssertion(ctx, connection, request, signedXml);
  await refuseReplay(ctx, connection, assertion);
  return toProfile(connection, assertion);
}

export const samlProtocol: SsoProtocol = { depart, arrive };

// ---- metadata ----------------------------------------------------------------------------------------------------

/** Our SP metadata (SAML 2.0 Metadata 2.4.4), for the IdP's administrator to import. */
export function serviceProviderMetadata(ctx: Context, connection: Pick<LoadedConnection, 'id'>): string {
  return generateServiceProviderMetadata({
    issuer: metadataUrl(ctx, connection.id),
    callbackUrl: acsUrl(ctx, connection.id),
    identifierFormat: EMAIL_FORMAT,
    wantAssertionsSigned: true,
    // A stable document: the same bytes on every fetch (an xs:ID, so not starting with a digit).
    generateUniqueId: () => `_${connection.id}`,
  });
}

const metadataProblem = (problem: string) =>
  new ValidationError(`The identity provider metadata is not usable: ${problem}`, [
    { path: 'metadata_xml', message: problem },
  ]);

/** A certificate from metadata (base64 DER, maybe wrapped) as PEM, or null when it is not one. */
function toPem(base64: string): string | null {
  const body = base64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) return null;
  // Lines of 64 characters, each ended (RFC 7468 2).
  const pem = `-----BEGIN CERTIFICATE-----\n${body.replace(/.{1,64}/g, '$&\n')}-----END CERTIFICATE-----\n`;
  try {
    new X509Certificate(pem);
    return pem;
  } catch {
    return null;
  }
}

/**
 * What a connection keeps from an IdP's metadata (SAML 2.0 Metadata 2.4.3): its entity id, its SingleSignOnService
 * for the HTTP-Redirect binding, and its signing certificates. One entity only: an aggregate of a federation is
 * refused rather than guessed from.
 */
export function parseIdpMetadata(xml: string): { entityId: string; entryPoint: string; certs: string[] } {
  if (typeof xml !== 'string' || !xml.trim()) throw metadataProblem('it is empty');
  if (xml.length > MAX_METADATA_CHARS) throw metadataProblem('it is larger than 1 MiB');
  if (xml.includes('\u0000')) throw metadataProblem('it holds a NUL character');
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw metadataProblem('it declares a document type, which is not allowed');
  const doc = parseXml(xml);
  if (!doc) throw metadataProblem('it is not well-formed XML');
  const entities = Array.from(doc.getElementsByTagNameNS(NS.metadata, 'EntityDescriptor'));
  const [entity] = entities;
  if (!entity) throw metadataProblem('it holds no EntityDescriptor');
  if (entities.length > 1)
    throw metadataProblem(`it holds ${entities.length} EntityDescriptors; give the metadata of one identity provider`);
  const entityId = attribute(entity, 'entityID')?.trim();
  if (!entityId) throw metadataProblem('its EntityDescriptor has no entityID');
  const idps = childElements(entity, NS.metadata, 'IDPSSODescriptor').filter((d) =>
    (attribute(d, 'protocolSupportEnumeration') ?? '').split(/\s+/).includes(NS.protocol),
  );
  const [idp] = idps;
  if (!idp) throw metadataProblem('it has no SAML 2.0 IDPSSODescriptor');
  if (idps.length > 1) throw metadataProblem('it has more than one SAML 2.0 IDPSSODescriptor');
  const redirect = childElements(idp, NS.metadata, 'SingleSignOnService').find(
    (s) => attribute(s, 'Binding') === HTTP_REDIRECT,
  );
  const entryPoint = attribute(redirect, 'Location')?.trim();
  if (!entryPoint) throw metadataProblem('it has no SingleSignOnService with the HTTP-Redirect binding');
  // https only, as for an entry_point given by hand: the AuthnRequest and the person's credentials go there.
  if (!URL.canParse(entryPoint) || new URL(entryPoint).protocol !== 'https:')
    throw metadataProblem('its SingleSignOnService Location is not an https URL');
  const certs: string[] = [];
  // A KeyDescriptor without `use` serves both signing and encryption (Metadata 2.4.1.1).
  for (const key of childElements(idp, NS.metadata, 'KeyDescriptor').filter(
    (k) => (attribute(k, 'use') ?? 'signing') === 'signing',
  )) {
    for (const data of childElements(firstChild(key, NS.dsig, 'KeyInfo') ?? key, NS.dsig, 'X509Data')) {
      for (const cert of childElements(data, NS.dsig, 'X509Certificate')) {
        const pem = toPem(cert.textContent ?? '');
        if (!pem) throw metadataProblem('a signing certificate is not an X.509 certificate');
        if (!certs.includes(pem)) certs.push(pem);
      }
    }
  }
  if (certs.length === 0) throw metadataProblem('it has no signing certificate (KeyDescriptor use="signing")');
  return { entityId, entryPoint, certs };
}
