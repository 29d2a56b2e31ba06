// The authorization endpoint's rules, as named steps in order (OAuth 2.0 4.1.1, OIDC Core 3.1.2). Until the
// client and its redirect URI are trusted, errors are shown on a page (never redirected: no open redirect);
// after that they go back to the client with error, error_description, state and iss (RFC 9207).
import { createHash, randomUUID } from 'node:crypto';
import type { Context } from '../../context.ts';
import { isUniqueViolation } from '../../db.ts';
import { addSeconds, epochSeconds } from '../../lib/clock.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { emitEvent } from '../../events/catalog.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { findEnabledClient } from './clients.service.ts';
import {
  AccessDenied, ConsentRequired, InvalidClient, InvalidRequest, InvalidScope, LoginRequired, OAuthError, UnsupportedResponseType,
} from './oauth.errors.ts';
import { describeScope, parseScope } from './scopes.ts';

export const CODE_TTL_SECONDS = 300;
const CONSENT_REQUEST_TTL_SECONDS = 600;
const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;
const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);

type Client = Awaited<ReturnType<typeof findEnabledClient>>;

export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  scope: string[];
  state: string | null;
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: 'S256' | 'plain' | null;
  prompt: string[];
  maxAge: number | null;
  idTokenHint: string | null;
  loginHint: string | null;
}

/** The signed-in browser session at the authorization endpoint, if any. */
export interface BrowserSession {
  userId: string;
  sessionId: string;
  authTime: Date;
}

export type AuthorizeOutcome =
  | { kind: 'redirect'; url: string }
  /** Send the browser to sign in, then back to the authorization endpoint with `params`. */
  | { kind: 'login'; params: Record<string, string>; loginHint: string | null }
  /** Send the browser to the consent page with this signed request. */
  | { kind: 'consent'; request: string };

/** An error shown on our own page because the client or its redirect URI cannot be trusted. */
export class AuthorizePageError extends OAuthError {}

/** Parameters arrive once each (RFC 6749 3.1); a repeated one is an error. */
export type RawParams = Record<string, string | string[] | undefined>;

export async function authorize(ctx: Context, raw: RawParams, session: BrowserSession | null): Promise<AuthorizeOutcome> {
  const { client, redirectUri, params, repeated } = await trustedClient(ctx, raw);
  try {
    if (repeated.length) throw new InvalidRequest(`Parameter given more than once: ${repeated.join(', ')}`);
    const request = validateRequest(client, redirectUri, params);
    const login = needsLogin(ctx, request, session, params);
    if (login) return login;
    await requireMembership(ctx, client, session!.userId);
    if (await needsConsent(ctx, client, request, session!.userId)) {
      if (request.prompt.includes('none')) throw new ConsentRequired();
      return { kind: 'consent', request: await signConsentRequest(ctx, request, session!) };
    }
    return { kind: 'redirect', url: await issueCode(ctx, client, request, session!) };
  } catch (error) {
    if (error instanceof OAuthError) return { kind: 'redirect', url: errorRedirect(ctx, redirectUri, error, params.state ?? null) };
    throw error;
  }
}

// Step 1: the client exists and is enabled, and the redirect URI is registered exactly.
async function trustedClient(ctx: Context, raw: RawParams) {
  const params: Record<string, string> = {};
  const repeated: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    if (Array.isArray(value)) repeated.push(key);
    else if (value !== undefined) params[key] = value;
  }
  let client: Client;
  try {
    client = await findEnabledClient(ctx, params.client_id);
  } catch (error) {
    if (error instanceof InvalidClient) throw new AuthorizePageError('invalid_client', 'Client not found');
    throw error;
  }
  const redirectUri = params.redirect_uri;
  if (!redirectUri) throw new AuthorizePageError('invalid_request', 'redirect_uri is required');
  if (!client.redirectUris.includes(redirectUri)) throw new AuthorizePageError('invalid_request', 'redirect_uri not registered');
  if (repeated.includes('client_id') || repeated.includes('redirect_uri')) {
    throw new AuthorizePageError('invalid_request', `Parameter given more than once: ${repeated.join(', ')}`);
  }
  return { client, redirectUri, params, repeated };
}

// Step 2: response type, scope, nonce, PKCE and prompt are well formed and allowed for this client.
function validateRequest(client: Client, redirectUri: string, p: Record<string, string>): AuthorizationRequest {
  if (!p.response_type) throw new InvalidRequest('response_type is required');
  if (p.response_type !== 'code') throw new UnsupportedResponseType();
  if (!client.grantTypes.includes('authorization_code')) throw new OAuthError('unauthorized_client', 'This client may not use the authorization code flow');
  const scope = parseScope(p.scope);
  if (scope.length === 0) throw new InvalidRequest('scope is required');
  if (scope.some((s) => !client.allowedScopes.includes(s))) throw new InvalidScope();
  const nonce = p.nonce ?? null;
  // The interface makes nonce required for OpenID Connect requests (replay protection).
  if (scope.includes('openid') && !nonce) throw new InvalidRequest('nonce is required for OpenID Connect requests');
  if (nonce && nonce.length > 512) throw new InvalidRequest('nonce is too long');
  if (p.state && p.state.length > 2048) throw new InvalidRequest('state is too long');

  let codeChallenge: string | null = null;
  let codeChallengeMethod: 'S256' | 'plain' | null = null;
  if (p.code_challenge !== undefined) {
    if (!PKCE_VALUE.test(p.code_challenge)) throw new InvalidRequest('code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]');
    const method = p.code_challenge_method ?? 'plain'; // RFC 7636 4.3
    if (method !== 'S256' && method !== 'plain') throw new InvalidRequest('code_challenge_method must be S256 or plain');
    codeChallenge = p.code_challenge;
    codeChallengeMethod = method;
  } else if (p.code_challenge_method !== undefined) {
    throw new InvalidRequest('code_challenge_method was given without code_challenge');
  }

  const prompt = (p.prompt ?? '').split(' ').filter(Boolean);
  if (prompt.some((v) => !PROMPTS.has(v))) throw new InvalidRequest('prompt has an unknown value');
  if (prompt.includes('none') && prompt.length > 1) throw new InvalidRequest('prompt=none cannot be combined with other values');
  let maxAge: number | null = null;
  if (p.max_age !== undefined) {
    if (!/^\d{1,10}$/.test(p.max_age)) throw new InvalidRequest('max_age must be a number of seconds');
    maxAge = Number(p.max_age);
  }
  return {
    clientId: client.clientId,
    redirectUri,
    scope,
    state: p.state ?? null,
    nonce,
    codeChallenge,
    codeChallengeMethod,
    prompt,
    maxAge,
    idTokenHint: p.id_token_hint ?? null,
    loginHint: p.login_hint ? p.login_hint.slice(0, 254) : null,
  };
}

// Step 3: a fresh enough sign-in of the right user (prompt=login, max_age, id_token_hint).
function needsLogin(ctx: Context, request: AuthorizationRequest, session: BrowserSession | null, params: Record<string, string>): AuthorizeOutcome | null {
  const now = ctx.clock.now();
  // In milliseconds: max_age=0 means a sign-in made for this very request (OIDC Core 3.1.2.1).
  const tooOld = session && request.maxAge !== null && now.getTime() - session.authTime.getTime() > request.maxAge * 1000;
  const hintMismatch = session && request.idTokenHint !== null && hintedSubject(request.idTokenHint) !== session.userId;
  if (session && !tooOld && !hintMismatch && !request.prompt.includes('login')) return null;
  if (request.prompt.includes('none')) throw new LoginRequired();
  // Come back without what asked for the new sign-in, so that it is not asked for again.
  const back = { ...params };
  delete back.max_age;
  const prompt = request.prompt.filter((v) => v !== 'login');
  if (prompt.length) back.prompt = prompt.join(' ');
  else delete back.prompt;
  return { kind: 'login', params: back, loginHint: request.loginHint };
}

/** The subject of an ID token we issued, read without checking expiry (a hint may be old); null if unreadable. */
function hintedSubject(idToken: string): string | null {
  try {
    const payload = JSON.parse(Buffer.from(idToken.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof payload.sub === 'string' ? payload.sub : null;
  } catch {
    return null;
  }
}

// Step 4: only members of the client's organization may authorize it.
async function requireMembership(ctx: Context, client: Client, userId: string): Promise<void> {
  const member = await ctx.db.membership.findUnique({ where: { userId_organizationId: { userId, organizationId: client.organizationId } } });
  if (!member) throw new InvalidClient('Client not found');
}

// Step 5: consent, unless the client does not ask for it or the user already approved these scopes.
async function needsConsent(ctx: Context, client: Client, request: AuthorizationRequest, userId: string): Promise<boolean> {
  if (request.prompt.includes('consent')) return true;
  if (!client.consentRequired) return false;
  const consent = await ctx.db.oAuthConsent.findUnique({ where: { userId_clientId: { userId, clientId: client.id } } });
  return !consent || request.scope.some((s) => !consent.scopes.includes(s));
}

async function signConsentRequest(ctx: Context, request: AuthorizationRequest, session: BrowserSession): Promise<string> {
  const now = epochSeconds(ctx.clock.now());
  return ctx.keys.sign(
    { iss: ctx.settings.issuer(), jti: randomUUID(), sub: session.userId, sid: session.sessionId, auth_time: epochSeconds(session.authTime), iat: now, exp: now + CONSENT_REQUEST_TTL_SECONDS, req: { ...request, prompt: [] } },
    'RS256',
    'consent+jwt',
  );
}

async function readConsentRequest(ctx: Context, token: string) {
  try {
    const { payload } = await ctx.keys.verify(token, { issuer: ctx.settings.issuer(), typ: 'consent+jwt', currentDate: ctx.clock.now() });
    return payload as { jti: string; exp: number; sub: string; sid: string; auth_time: number; req: AuthorizationRequest };
  } catch {
    throw new InvalidRequest('The consent request is invalid or has expired: start again from the application');
  }
}

// Step 6: a single-use code bound to the client, redirect URI, PKCE challenge and the user's session version.
async function issueCode(ctx: Context, client: Client, request: AuthorizationRequest, session: BrowserSession): Promise<string> {
  const code = randomToken('tsa_');
  const now = ctx.clock.now();
  const user = await ctx.db.user.findUniqueOrThrow({ where: { id: session.userId }, select: { sessionVersion: true } });
  await ctx.db.$transaction(async (tx) => {
    const grant = await tx.oAuthGrant.create({ data: { clientId: client.id, userId: session.userId, scope: request.scope.join(' ') } });
    await tx.authorizationCode.create({
      data: {
        codeHash: sha256(code),
        grantId: grant.id,
        clientId: client.id,
        userId: session.userId,
        organizationId: client.organizationId,
        redirectUri: request.redirectUri,
        scope: request.scope.join(' '),
        nonce: request.nonce,
        codeChallenge: request.codeChallenge,
        codeChallengeMethod: request.codeChallengeMethod,
        authTime: session.authTime,
        sessionVersion: user.sessionVersion,
        expiresAt: addSeconds(now, CODE_TTL_SECONDS),
      },
    });
    const org = await tx.organization.findUniqueOrThrow({ where: { id: client.organizationId }, select: { id: true, name: true } });
    await emitEvent(tx, 'oauth.authorization.granted', org, { client: { id: client.id, clientId: client.clientId, name: client.name }, user: { id: session.userId }, scope: request.scope.join(' ') });
    await recordAudit(ctx, { action: 'oauth.authorize', actorId: session.userId, organizationId: client.organizationId, targetType: 'oauth_client', targetId: client.id, details: { scope: request.scope.join(' ') } }, tx);
  });
  return withParams(request.redirectUri, { code, state: request.state, iss: ctx.settings.issuer() });
}

function errorRedirect(ctx: Context, redirectUri: string, error: OAuthError, state: string | null): string {
  return withParams(redirectUri, { error: error.code, error_description: error.message, state, iss: ctx.settings.issuer() });
}

function withParams(uri: string, params: Record<string, string | null>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
  return url.toString();
}

export interface ConsentPrompt {
  client: { name: string; description: string };
  organization: { name: string };
  scopes: { name: string; description: string }[];
}

/** What the consent page shows: the application, its organization, the scopes in words. */
export async function describeConsentRequest(ctx: Context, token: string, userId: string): Promise<ConsentPrompt> {
  const payload = await readConsentRequest(ctx, token);
  if (payload.sub !== userId) throw new InvalidRequest('This consent request belongs to another sign-in');
  const client = await findEnabledClient(ctx, payload.req.clientId);
  const org = await ctx.db.organization.findUniqueOrThrow({ where: { id: client.organizationId }, select: { name: true } });
  return {
    client: { name: client.name, description: client.description },
    organization: org,
    scopes: payload.req.scope.map((name) => ({ name, description: describeScope(name) })),
  };
}

/** The user's answer on the consent page: a redirect back to the client with a code, or access_denied. */
export async function decideConsent(ctx: Context, token: string, session: BrowserSession, approve: boolean): Promise<string> {
  const payload = await readConsentRequest(ctx, token);
  if (payload.sub !== session.userId) throw new InvalidRequest('This consent request belongs to another sign-in');
  await markAnswered(ctx, payload.jti, payload.exp);
  const request = payload.req;
  const client = await findEnabledClient(ctx, request.clientId);
  if (!client.redirectUris.includes(request.redirectUri)) throw new InvalidRequest('redirect_uri not registered');
  if (!approve) {
    await recordAudit(ctx, { action: 'oauth.consent.deny', actorId: session.userId, organizationId: client.organizationId, targetType: 'oauth_client', targetId: client.id });
    return errorRedirect(ctx, request.redirectUri, new AccessDenied(), request.state);
  }
  const existing = await ctx.db.oAuthConsent.findUnique({ where: { userId_clientId: { userId: session.userId, clientId: client.id } } });
  const scopes = [...new Set([...(existing?.scopes ?? []), ...request.scope])];
  await ctx.db.oAuthConsent.upsert({
    where: { userId_clientId: { userId: session.userId, clientId: client.id } },
    create: { userId: session.userId, clientId: client.id, scopes },
    update: { scopes },
  });
  await recordAudit(ctx, { action: 'oauth.consent.grant', actorId: session.userId, organizationId: client.organizationId, targetType: 'oauth_client', targetId: client.id, details: { scope: request.scope.join(' ') } });
  // The sign-in the request was made under, not a newer one.
  return issueCode(ctx, client, request, { ...session, authTime: new Date(payload.auth_time * 1000) });
}

async function markAnswered(ctx: Context, jti: string, exp: number): Promise<void> {
  try {
    await ctx.db.consentAnswer.create({ data: { jti, expiresAt: new Date(exp * 1000) } });
  } catch (error) {
    if (isUniqueViolation(error)) throw new InvalidRequest('This consent request has already been answered: start again from the application');
    throw error;
  }
}

/** PKCE (RFC 7636 4.6). */
export function pkceMatches(method: string | null, challenge: string, verifier: string): boolean {
  if (!PKCE_VALUE.test(verifier)) return false;
  const computed = method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
  return computed === challenge;
}
