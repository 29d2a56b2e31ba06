import type { Handle, HandleServerError } from '@sveltejs/kit/hooks';
import { gql, graphql, GraphQLRequestError, sessionToken } from '#lib/server/graphql.ts';
import { clearSessionCookie } from '#lib/server/session.ts';
import { RETRY_AFTER_SECONDS } from '../../schema/errors/unavailable.ts';

const VIEWER = graphql(`
	query Viewer {
		viewer {
			user {
				id
				email
				name
			}
			organization {
				id
				name
				role
			}
			platformAdmin
			mfaEnrollmentRequired
			organizations {
				id
				name
				role
			}
		}
	}
`);

const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data']);

/**
 * Every POST here is a form action, and actions read `request.formData()`, which throws on any other body (Kit
 * lets text/plain through, and a multipart body without its boundary fails to parse): refused here, in one
 * place, as the client's mistake. The body is parsed from a copy, so the action still reads the original. The
 * refusal is returned, not thrown: Kit does not catch what `handle` throws for a path it could not decode, and
 * that request would never be answered.
 */
async function unreadableForm(request: Request): Promise<Response | null> {
	if (request.method !== 'POST') return null;
	const [type = ''] = (request.headers.get('content-type') ?? '').split(';', 1);
	if (!FORM_TYPES.has(type.trim().toLowerCase()))
		return refusal(415, 'Send the form as application/x-www-form-urlencoded or multipart/form-data.');
	try {
		await request.clone().formData();
		return null;
	} catch {
		return refusal(400, 'The form could not be read.');
	}
}

const refusal = (status: number, message: string) =>
	new Response(JSON.stringify({ status, message }), {
		status,
		headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
	});

/** The database down or saturated (the bridge's service_unavailable): 503 with Retry-After, as the API answers. */
const unavailable = (caught: unknown) => caught instanceof GraphQLRequestError && caught.code === 'service_unavailable';

const unavailableResponse = () =>
	new Response(JSON.stringify({ status: 503, message: 'The service is temporarily unavailable; try again shortly.' }), {
		status: 503,
		headers: {
			'content-type': 'application/json',
			'cache-control': 'no-store',
			'retry-after': String(RETRY_AFTER_SECONDS),
		},
	});

/** What handleError found to be the client's mistake, for the response Kit built around it (see below). */
const clientErrors = new WeakMap<App.Locals, number>();

/** Resolves the session once per request into `locals`; routes only read `locals`. */
export const handle: Handle = async ({ event, resolve }) => {
	event.locals.user = null;
	event.locals.organization = null;
	event.locals.role = null;
	event.locals.platformAdmin = false;
	event.locals.mfaEnrollmentRequired = false;
	event.locals.organizations = [];

	const refused = await unreadableForm(event.request);
	if (refused) return refused;

	if (sessionToken(event)) {
		const { viewer } = await gql(event, VIEWER).catch((caught) => {
			if (unavailable(caught)) return { viewer: undefined };
			throw caught;
		});
		if (viewer === undefined) return unavailableResponse();
		if (viewer) {
			event.locals.user = viewer.user;
			if (viewer.organization) {
				const { role, ...organization } = viewer.organization;
				event.locals.organization = organization;
				event.locals.role = role;
			}
			event.locals.platformAdmin = viewer.platformAdmin;
			event.locals.mfaEnrollmentRequired = viewer.mfaEnrollmentRequired;
			event.locals.organizations = viewer.organizations;
		} else {
			// Expired or revoked: drop the stale cookie.
			clearSessionCookie(event);
		}
	}

	let response = await resolve(event);
	// A form action that failed on a GraphQL error of the client's making: Kit takes the status of a plain
	// (non-enhanced) form post's error from the thrown error itself, which is 500 for anything but its own.
	const status = clientErrors.get(event.locals);
	if (status && response.status === 500) response = new Response(response.body, { status, headers: response.headers });
	if (status === 503) response = withHeader(response, 'retry-after', String(RETRY_AFTER_SECONDS));
	// A page rendered for a session shows that user's data: no cache, shared or private, may keep it.
	if (event.locals.user) response = withHeader(response, 'cache-control', 'no-store');
	return response;
};

function withHeader(response: Response, name: string, value: string): Response {
	try {
		response.headers.set(name, value);
		return response;
	} catch {
		// Immutable headers (a fetched response): copy.
		const copy = new Response(response.body, response);
		copy.headers.set(name, value);
		return copy;
	}
}

/**
 * A top-level GraphQL error the caller caused (bad input, not found, forbidden, rate limited) answers with the
 * status the API gives its code (the one table, server/errors/http.ts), is not logged as a failure, and shows
 * the service's message, which is written to be shown. Anything else is logged and stays a 500.
 */
export const handleError: HandleServerError = ({ kind, error: caught, event }) => {
	if (kind === 'unknown' && caught instanceof GraphQLRequestError && (caught.status < 500 || unavailable(caught))) {
		clientErrors.set(event.locals, caught.status);
		return { status: caught.status, message: caught.message };
	}
	if (kind === 'unknown') console.error(caught);
};
