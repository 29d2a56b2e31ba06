// What the two OAuth client pages share: the GraphQL documents, the form <-> input mapping, the action gate.
import { error, type RequestEvent } from '@sveltejs/kit';
import { errorPage } from '#lib/server/errors.ts';
import { requireOrgAdmin as orgAdminGate } from '#lib/server/gates.ts';
import { gql, graphql, GraphQLRequestError, type ResultOf } from '#lib/server/graphql.ts';
import type { ClientFormValues } from './client-form.ts';
import { formText } from '#lib/form.ts';

/** An OAuth client as the pages read it. */
export const CLIENT_FIELDS = graphql(`
	fragment OAuthClientFields on OAuthClient {
		id
		clientId
		organizationId
		name
		description
		redirectUris
		postLogoutRedirectUris
		allowedOrigins
		resources
		allowedScopes
		grantTypes
		idTokenSignedResponseAlg
		enabled
		consentRequired
		tokenEndpointAuthMethod
		createdAt
		updatedAt
	}
`);

export type OAuthClient = ResultOf<typeof CLIENT_FIELDS>;

/** The secret as the create and rotate mutations give it: the only time it is ever readable. */
export interface ShownSecret {
	id: string;
	clientId: string;
	name: string;
	/** None for a public client. */
	clientSecret: string | null;
}

/** The gate of every OAuth client action: an owner or admin of the session's current organization. Returns its id. */
export const requireOrgAdmin = (event: Parameters<typeof orgAdminGate>[0]) =>
	orgAdminGate(event, 'manage OAuth clients').organizationId;

const CLIENT = graphql(
	`
		query Client($id: ID!) {
			oauthClient(id: $id) {
				...OAuthClientFields
			}
		}
	`,
	[CLIENT_FIELDS],
);

const NOT_FOUND = 'No such OAuth client in this organization.';

/**
 * The client `id` of organization `organizationId`, or the 404 page. Platform admins may read any organization's
 * clients through GraphQL, but these pages are about the current organization only, so another one's is not found.
 */
export async function loadOwnedClient(
	event: Pick<RequestEvent, 'platform' | 'cookies'>,
	id: string,
	organizationId: string,
): Promise<OAuthClient> {
	if (!id || id.length > 200) error(404, NOT_FOUND);
	let client: OAuthClient;
	try {
		({ oauthClient: client } = await gql(event, CLIENT, { id }));
	} catch (err) {
		// An identifier the service refuses outright (a NUL in the path) names no client of ours either.
		if (err instanceof GraphQLRequestError && err.code === 'invalid_request') error(404, NOT_FOUND);
		rethrowAccess(err);
	}
	if (client.organizationId !== organizationId) error(404, NOT_FOUND);
	return client;
}

/** What these pages say for an access problem; other codes show the service's message. */
const MESSAGES: Record<string, string> = {
	forbidden: 'Your role does not allow this.',
	not_found: NOT_FOUND,
	unauthenticated: 'Your session has ended. Sign in again.',
};

/**
 * A top-level error the caller caused (the role changed since the page was shown, a client that is gone, input
 * the service refuses) as the error page of its status, with these pages' words for access problems.
 */
export function rethrowAccess(err: unknown): never {
	return errorPage(err, MESSAGES);
}

/** One entry per line; blank lines and surrounding spaces dropped. */
const lines = (value: FormDataEntryValue | null) =>
	(typeof value === 'string' ? value : '')
		.split(/\r?\n/)
		.map((line) => line.trim())
		.filter(Boolean);

/** Product scopes are typed as one line, separated by spaces or commas. */
const words = (value: string) => value.split(/[\s,]+/).filter(Boolean);

const strings = (form: FormData, name: string) => form.getAll(name).map(String);

/** What the registration and edit forms sent, kept as typed so that a failed submission shows it again. */
export function readClientForm(form: FormData): ClientFormValues {
	return {
		name: formText(form, 'name'),
		description: formText(form, 'description'),
		redirectUris: formText(form, 'redirect_uris'),
		postLogoutRedirectUris: formText(form, 'post_logout_redirect_uris'),
		allowedOrigins: formText(form, 'allowed_origins'),
		resources: formText(form, 'resources'),
		scopes: strings(form, 'scopes'),
		productScopes: formText(form, 'product_scopes'),
		grantTypes: strings(form, 'grant_types'),
		idTokenSignedResponseAlg: formText(form, 'id_token_signed_response_alg', 'RS256'),
		consentRequired: form.has('consent_required'),
		tokenEndpointAuthMethod: formText(form, 'token_endpoint_auth_method', 'client_secret_post'),
	};
}

/** The GraphQL input for the values of the form (both forms send every field). */
export function clientInput(values: ClientFormValues) {
	return {
		name: values.name,
		description: values.description,
		redirectUris: lines(values.redirectUris),
		postLogoutRedirectUris: lines(values.postLogoutRedirectUris),
		allowedOrigins: lines(values.allowedOrigins),
		resources: lines(values.resources),
		allowedScopes: [...values.scopes, ...words(values.productScopes)],
		grantTypes: values.grantTypes,
		idTokenSignedResponseAlg: values.idTokenSignedResponseAlg,
		consentRequired: values.consentRequired,
	};
}
