import { fail, redirect, type ActionFailure, type RequestEvent } from '@sveltejs/kit';
import { reasonMessage, refused, userErrorStatus } from '#lib/server/errors.ts';
import {
	enrolUrl,
	gql,
	graphql,
	GraphQLRequestError,
	USER_ERROR_FIELDS,
	type ResultOf,
	type UserError,
} from '#lib/server/graphql.ts';
import { homeOf, LOGIN_PAYLOAD_FIELDS, safeReturnTo, startSession, type LoginPayload } from '#lib/server/session.ts';
import type { Actions, PageServerLoad } from './$types.js';

const LOGIN = graphql(
	`
		mutation Login($email: String!, $password: String!) {
			login(input: { email: $email, password: $password }) {
				__typename
				...LoginPayloadFields
				... on MfaChallenge {
					mfaToken
					expiresAt
					methods
				}
				...UserErrorFields
			}
		}
	`,
	[LOGIN_PAYLOAD_FIELDS, USER_ERROR_FIELDS],
);

const COMPLETE_MFA_LOGIN = graphql(
	`
		mutation CompleteMfaLogin($input: MfaLoginInput!) {
			completeMfaLogin(input: $input) {
				__typename
				...LoginPayloadFields
				...UserErrorFields
			}
		}
	`,
	[LOGIN_PAYLOAD_FIELDS, USER_ERROR_FIELDS],
);

const SSO_ROUTE = graphql(`
	query SsoRoute($email: String!) {
		ssoRoute(email: $email) {
			connectionId
			name
			requireSso
		}
	}
`);

const SOCIAL_PROVIDERS = graphql(`
	query SocialProviders {
		socialProviders {
			id
			name
			type
		}
	}
`);

type SsoRoute = ResultOf<typeof SSO_ROUTE>['ssoRoute'];

/**
 * What the page shows after a post: the step (the address, or its password), the address, why the last try was
 * refused, the second factor's step once the password was right, and where an address that must use its identity
 * provider goes instead. One shape for every step, so that the page reads each field of any answer.
 */
interface StepData {
	step: 'email' | 'password';
	email: string;
	message?: string;
	secondFactor?: { mfaToken: string; methods: string[]; recovery: boolean };
	sso?: { name: string; href: string };
}
type StepAnswer = Promise<StepData | ActionFailure<StepData>>;

/** Where the visitor comes from, said above the form: the account pages send them here after a change. */
const NOTICES = {
	reset: 'Your password was changed. Sign in with the new one.',
	verified: 'Your e-mail address is confirmed. Sign in to continue.',
} as const;

function noticeFor(url: URL): string | null {
	const key = (Object.keys(NOTICES) as (keyof typeof NOTICES)[]).find((k) => url.searchParams.get(k) === '1');
	return key ? NOTICES[key] : null;
}

const RATE_LIMITED = 'Too many sign-in attempts. Please wait a moment and try again.';

/**
 * Why a sign-in through an identity provider ended back here (/sso/{id}/* sends ?sso_error=<reason>, the stable
 * reasons of docs/architecture.md#single-sign-on), in the page's own words: the address bar's text is never shown.
 */
const SSO_FAILED = 'Signing in through your identity provider did not work. Please try again.';

const SSO_ERRORS: Record<string, string> = {
	expired_request: 'That sign-in took too long or was already used. Please start again.',
	wrong_browser: 'That sign-in was started in another browser or window. Please start again here.',
	idp_error: 'Your identity provider did not sign you in. Try again, or ask your administrator for help.',
	invalid_response:
		"Your identity provider's answer could not be verified, so you were not signed in. Try again, or ask your administrator to check the connection.",
	no_email:
		'Your identity provider did not share an e-mail address for your account. Ask your administrator to release it.',
	email_outside_domains:
		'Your identity provider signed you in with an e-mail address of a domain it does not serve here. Ask your administrator.',
	unverified_email: 'Your e-mail address is not verified with that provider yet. Verify it there, then try again.',
	disabled: 'Signing in through this identity provider is switched off. Ask your administrator.',
	sso_required:
		'Your organization requires you to sign in through its own identity provider: enter your e-mail address to be sent there.',
	account_exists:
		'An account with this e-mail address already exists, so this provider did not sign you in. Sign in with your password or passkey, then connect the provider under Security (Connected sign-ins): it signs you in from then on.',
	identity_in_use:
		'That account is already connected to another Tessera account. Sign in to that Tessera account and disconnect it under Security first, or connect a different account.',
	unauthenticated: 'Sign in first, then connect the provider under Security (Connected sign-ins).',
	unknown_connection:
		'That sign-in link leads nowhere: the identity provider is not set up here. Enter your e-mail address to sign in.',
	rate_limited: RATE_LIMITED,
	invalid_request: 'That sign-in request could not be read. Please start again.',
	sso_failed: SSO_FAILED,
};

const ssoErrorOf = (url: URL) => reasonMessage(url.searchParams.get('sso_error'), SSO_ERRORS, SSO_FAILED);

/** Only an address shaped like one is looked up: an identity provider serves domains, and junk has none. */
const looksLikeEmail = (email: string) =>
	email.length <= 254 && /^[^\s@\x00-\x1f\x7f]+@[^\s@\x00-\x1f\x7f]+$/.test(email);

/** Home-realm discovery: the connection that signs in `email`, if its organization brought its own identity provider. */
async function ssoRouteOf(event: RequestEvent, email: string): Promise<SsoRoute> {
	if (!looksLikeEmail(email)) return null;
	const { ssoRoute } = await gql(event, SSO_ROUTE, { email });
	return ssoRoute;
}

const CONNECTION_ID = /^[A-Za-z0-9-]{1,100}$/;

/**
 * Where a sign-in through connection `id` starts (a Koa route, not a page): back to `returnTo` when it is one of
 * ours, with the address the person typed for the provider's own form.
 */
function ssoStart(id: string, returnTo: string | null, origin: string, loginHint?: string): string {
	const query = new URLSearchParams();
	const back = returnTo ? safeReturnTo(returnTo, origin, '') : '';
	if (back) query.set('return_to', back);
	if (loginHint) query.set('login_hint', loginHint);
	return `/sso/${encodeURIComponent(id)}/start${query.size ? `?${query}` : ''}`;
}

/**
 * A signed-in visitor is sent on, unless the application asked for a fresh sign-in (reauth=1: prompt=login, an old
 * session for max_age, a second factor the session did not use): the form then, with their address filled in.
 *
 * The page asks for the e-mail address first (docs/architecture.md#single-sign-on): an address whose organization
 * signs in through its own identity provider goes there, any other to its password. An address given by the
 * application (login_hint) that no provider serves skips to the password; `change=1` is the way back to the address.
 */
export const load: PageServerLoad = async (event) => {
	const { locals, url } = event;
	const returnTo = url.searchParams.get('return_to');
	const reauth = url.searchParams.get('reauth') === '1';
	if (locals.user && !reauth) {
		// A signed-in person sent here by /sso/* (a refusal the provider's cross-site answer carried no cookie for, so
		// /sso/* could not tell it was a connecting or a test): the security page says why, rather than a sign-in form
		// they do not need.
		const ssoError = url.searchParams.get('sso_error');
		if (ssoError !== null)
			redirect(303, `/portal/security?${new URLSearchParams({ link_error: ssoError.slice(0, 40) })}`);
		redirect(303, safeReturnTo(returnTo, url.origin, homeOf(locals.role)));
	}
	// Sent by /oauth/authorize from the application's login_hint: untrusted text, only ever a field's value.
	const loginHint =
		(locals.user && reauth ? locals.user.email : url.searchParams.get('login_hint')?.slice(0, 254)) ?? null;
	const changing = url.searchParams.get('change') === '1';
	const [{ socialProviders }, route] = await Promise.all([
		gql(event, SOCIAL_PROVIDERS),
		loginHint && !changing ? ssoRouteOf(event, loginHint).catch(() => undefined) : undefined,
	]);
	const passwordFirst = !!loginHint && looksLikeEmail(loginHint) && route === null;
	return {
		returnTo,
		loginHint,
		notice: noticeFor(url),
		reauth: reauth && !!locals.user,
		ssoError: ssoErrorOf(url),
		step: passwordFirst ? ('password' as const) : ('email' as const),
		changing,
		socialProviders: socialProviders.map((p) => ({
			id: p.id,
			name: p.name,
			href: ssoStart(p.id, returnTo, url.origin),
		})),
	};
};

const field = (form: FormData, name: string) => {
	const value = form.get(name);
	return typeof value === 'string' ? value : '';
};

/**
 * The sign-in is done (startSession), and on to where the visitor was going, or to set up a second factor first when
 * the organization requires one.
 */
async function signedIn(event: RequestEvent, result: LoginPayload, returnTo: string | null): Promise<never> {
	await startSession(event, result);
	// Owners and admins of the organization the session starts in land on its admin dashboard.
	const next = safeReturnTo(returnTo, event.url.origin, homeOf(result.organization?.role));
	if (result.mfaEnrollmentRequired) redirect(303, enrolUrl(next));
	redirect(303, next);
}

/**
 * The first step: the address alone. An organization's connection serving its domain takes the browser to its
 * identity provider (a 303, so that it works without scripts); any other address goes on to its password.
 */
async function emailStep(event: RequestEvent, form: FormData, returnTo: string | null): StepAnswer {
	const email = field(form, 'email').trim();
	if (!email) return fail(400, { step: 'email' as const, email, message: 'Enter your e-mail address.' });
	let route: SsoRoute;
	try {
		route = await ssoRouteOf(event, email);
	} catch (err) {
		return refused(err, { step: 'email' as const, email }, { rate_limited: RATE_LIMITED });
	}
	if (route) redirect(303, ssoStart(route.connectionId, returnTo, event.url.origin, email));
	return { step: 'password' as const, email };
}

/**
 * A password refused because the address's organization requires its identity provider (sso_required): the
 * message, and a link to that provider's sign-in, named as the provider is.
 */
async function ssoRequired(event: RequestEvent, result: UserError, email: string, returnTo: string | null): StepAnswer {
	const id = result.details.find((d) => d.path === 'connection')?.message ?? '';
	const route = await ssoRouteOf(event, email).catch(() => null);
	const sso = CONNECTION_ID.test(id)
		? {
				name: route?.connectionId === id ? route.name : 'your identity provider',
				href: ssoStart(id, returnTo, event.url.origin, email),
			}
		: undefined;
	return fail(userErrorStatus(result), { step: 'password' as const, email, message: result.message, sso });
}

/** The password step; for an account with a second factor it answers the code step, the mfa token kept in the form. */
async function passwordStep(event: RequestEvent, form: FormData, returnTo: string | null): StepAnswer {
	const email = field(form, 'email').trim();
	const password = field(form, 'password');
	let result: ResultOf<typeof LOGIN>['login'];
	try {
		({ login: result } = await gql(event, LOGIN, { email, password }));
	} catch (err) {
		// A UserError a resolver returns reaches the portal as a top-level error with its code and details (graphql-js
		// raises an Error that a resolver returns), as sso_required does.
		if (err instanceof GraphQLRequestError && err.code === 'sso_required')
			return ssoRequired(event, { code: err.code, message: err.message, details: err.details }, email, returnTo);
		return refused(
			err,
			{ step: 'password' as const, email },
			{
				rate_limited: RATE_LIMITED,
				// Input no account can have (a NUL character, say): the same answer as a wrong password.
				invalid_request: 'Invalid email or password',
			},
		);
	}
	if (result.__typename === 'UserError') {
		if (result.code === 'sso_required') return ssoRequired(event, result, email, returnTo);
		return fail(userErrorStatus(result), { step: 'password' as const, email, message: result.message });
	}
	if (result.__typename === 'MfaChallenge') {
		return {
			step: 'password' as const,
			email,
			secondFactor: { mfaToken: result.mfaToken, methods: result.methods, recovery: false },
		};
	}
	return signedIn(event, result, returnTo);
}

/**
 * The second step: a code of the authenticator app or a recovery code, with the mfa token of the first. A wrong
 * code leaves the token for another try; an expired or used token starts over at the password.
 */
async function secondFactorStep(event: RequestEvent, form: FormData, returnTo: string | null): StepAnswer {
	const email = field(form, 'email');
	const mfaToken = field(form, 'mfaToken');
	const methods = field(form, 'methods').split(',').filter(Boolean);
	const recovery = form.get('method') === 'recovery_code';
	const answer = field(form, recovery ? 'recoveryCode' : 'code').replace(/\s+/g, '');
	const secondFactor = { mfaToken, methods, recovery };
	const again = (status: number, message: string) =>
		fail(status, { step: 'password' as const, email, secondFactor, message });
	// The switch between the app's code and a recovery code, on a page without scripts (with them it stays in the page).
	const use = form.get('use');
	if (use === 'recovery_code' || use === 'totp')
		return { step: 'password' as const, email, secondFactor: { ...secondFactor, recovery: use === 'recovery_code' } };
	if (!answer)
		return again(
			400,
			recovery ? 'Enter one of your recovery codes.' : 'Enter the 6-digit code from your authenticator app.',
		);
	let result: ResultOf<typeof COMPLETE_MFA_LOGIN>['completeMfaLogin'];
	try {
		({ completeMfaLogin: result } = await gql(event, COMPLETE_MFA_LOGIN, {
			input: recovery ? { mfaToken, recoveryCode: answer } : { mfaToken, code: answer },
		}));
	} catch (err) {
		return refused(err, { step: 'password' as const, email, secondFactor }, { rate_limited: RATE_LIMITED });
	}
	if (result.__typename === 'UserError') {
		if (result.details.some((d) => d.path === 'mfaToken')) {
			// Expired (5 minutes) or used: back to the password.
			return fail(400, {
				step: 'password' as const,
				email,
				message: 'This sign-in has expired. Enter your password again.',
			});
		}
		if (result.code === 'invalid_credentials')
			return again(
				401,
				recovery
					? 'That recovery code is wrong or was already used.'
					: 'That code is wrong or was already used. Enter the current one.',
			);
		return again(userErrorStatus(result), result.message);
	}
	return signedIn(event, result, returnTo);
}

export const actions: Actions = {
	// One action for every step, told apart by what the form holds (the code step's mfa token, the password): the form
	// posts to /login either way, and a post with the address and the password signs in at once, as before.
	default: async (event): StepAnswer => {
		const form = await event.request.formData();
		const returnTo = field(form, 'return_to') || null;
		if (form.has('mfaToken')) return secondFactorStep(event, form, returnTo);
		return form.has('password') ? passwordStep(event, form, returnTo) : emailStep(event, form, returnTo);
	},
};
