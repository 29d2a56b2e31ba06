// The OAuth client form's values and choices, shared by the registration form, the edit form and their actions.

/** The form's fields as typed: lists stay one entry per line until the action splits them. */
export interface ClientFormValues {
	name: string;
	description: string;
	redirectUris: string;
	postLogoutRedirectUris: string;
	allowedOrigins: string;
	resources: string;
	/** The standard scopes ticked. */
	scopes: string[];
	/** Product scopes (product slugs), separated by spaces or commas. */
	productScopes: string;
	grantTypes: string[];
	idTokenSignedResponseAlg: string;
	consentRequired: boolean;
	/** client_secret_post or none (a public client); chosen at registration only. */
	tokenEndpointAuthMethod: string;
}

export type { FieldErrors } from '#lib/field-errors.ts';

/** The form's labels, by the GraphQL names of the client's input fields: a problem names the field as the form does. */
export const CLIENT_LABELS = {
	name: 'Name',
	description: 'Description',
	redirectUris: 'Redirect URIs',
	postLogoutRedirectUris: 'Post-logout redirect URIs',
	allowedOrigins: 'Allowed origins',
	resources: 'Resources',
	allowedScopes: 'Allowed scopes',
	grantTypes: 'Grant types',
	idTokenSignedResponseAlg: 'ID token signing algorithm',
	consentRequired: 'Require consent',
	tokenEndpointAuthMethod: 'Kind of application',
} as const;

/** What a client is, in the words the registration form offers (docs/architecture.md#apps-without-secrets). */
export const CLIENT_KINDS = [
	{
		value: 'client_secret_post',
		label: 'Server-side application',
		hint: 'Runs on a server that keeps a client secret.',
	},
	{
		value: 'none',
		label: 'Browser, mobile or command-line app',
		hint: 'A public client: it gets no secret, must use PKCE (S256), and cannot use client_credentials or api.',
	},
] as const;

export const STANDARD_SCOPES = [
	{ value: 'openid', hint: 'sign users in (OpenID Connect)' },
	{ value: 'profile', hint: 'name and picture' },
	{ value: 'email', hint: 'e-mail address' },
	{ value: 'organization', hint: 'organization and role' },
	{ value: 'offline_access', hint: 'refresh tokens' },
	{ value: 'api', hint: "act as the user in Tessera's API (never granted by default)" },
] as const;

export const GRANT_TYPES = [
	{ value: 'authorization_code', hint: 'users sign in through the browser' },
	{ value: 'refresh_token', hint: 'keep access without asking again' },
	{ value: 'client_credentials', hint: 'the application acts on its own, without a user' },
	{
		value: 'urn:ietf:params:oauth:grant-type:device_code',
		hint: 'a device without a browser: the person approves its code on /device',
	},
] as const;

export const SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA'] as const;

const STANDARD = new Set<string>(STANDARD_SCOPES.map((s) => s.value));

/** A new registration: a browser sign-in asking for openid, consent asked. */
export const NEW_CLIENT: ClientFormValues = {
	name: '',
	description: '',
	redirectUris: '',
	postLogoutRedirectUris: '',
	allowedOrigins: '',
	resources: '',
	scopes: ['openid'],
	productScopes: '',
	grantTypes: ['authorization_code', 'refresh_token'],
	idTokenSignedResponseAlg: 'RS256',
	consentRequired: true,
	tokenEndpointAuthMethod: 'client_secret_post',
};

/** The stored client's fields the edit form shows (clients.server.ts reads them; this module is the form's alone). */
export interface StoredClient {
	name: string;
	description: string;
	redirectUris: readonly string[];
	postLogoutRedirectUris: readonly string[];
	allowedOrigins: readonly string[];
	resources: readonly string[];
	allowedScopes: readonly string[];
	grantTypes: readonly string[];
	idTokenSignedResponseAlg: string;
	consentRequired: boolean;
	tokenEndpointAuthMethod: string;
}

/** The edit form's starting point: the client as it is stored. */
export function valuesOf(client: StoredClient): ClientFormValues {
	return {
		name: client.name,
		description: client.description,
		redirectUris: client.redirectUris.join('\n'),
		postLogoutRedirectUris: client.postLogoutRedirectUris.join('\n'),
		allowedOrigins: client.allowedOrigins.join('\n'),
		resources: client.resources.join('\n'),
		scopes: client.allowedScopes.filter((s) => STANDARD.has(s)),
		productScopes: client.allowedScopes.filter((s) => !STANDARD.has(s)).join(' '),
		grantTypes: [...client.grantTypes],
		idTokenSignedResponseAlg: client.idTokenSignedResponseAlg,
		consentRequired: client.consentRequired,
		tokenEndpointAuthMethod: client.tokenEndpointAuthMethod,
	};
}
