import { fail, type ActionFailure } from '@sveltejs/kit';
import { userErrorStatus } from '#lib/server/errors.ts';
import { gql } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import {
	actsAsOwner,
	field,
	fieldErrors,
	refused,
	type FieldErrors,
	requireOrgAdmin,
	type UserError,
} from '../settings.server.ts';
import {
	CONNECTION_FIELDS,
	CONNECTION_LABELS,
	connectionFormValues,
	connectionInput,
	findConnection,
	NOT_FOUND,
	parseRoleMap,
	readConnectionForm,
	ROLES,
	type Connection,
	type ConnectionFormValues,
	type ConnectionType,
} from './sso.server.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';

const DOMAIN_PAGE = 100;

const DOMAIN_FIELDS = /* GraphQL */ `id domain verified verifiedAt checkedAt createdAt verification { type name value }`;

const DOMAINS = /* GraphQL */ `
	query Domains($org: String, $limit: Int, $cursor: String) {
		domains(organizationId: $org, limit: $limit, cursor: $cursor) { items { ${DOMAIN_FIELDS} } nextCursor }
	}
`;

const CONNECTIONS = /* GraphQL */ `
	query SsoConnections($org: String!) {
		ssoConnections(organizationId: $org) { ${CONNECTION_FIELDS} }
		subscriptions(organizationId: $org, limit: 100) { items { id status totalSeats assignedSeats product { name } } }
	}
`;

const PLATFORM_CONNECTIONS = /* GraphQL */ `
	query PlatformConnections {
		ssoConnections(platform: true) { ${CONNECTION_FIELDS} }
	}
`;

const ADD_DOMAIN = /* GraphQL */ `
	mutation AddDomain($input: AddDomainInput!) {
		addDomain(input: $input) {
			__typename
			... on Domain {
				id
				domain
			}
			... on UserError {
				code
				message
				details {
					path
					message
				}
			}
		}
	}
`;

const VERIFY_DOMAIN = /* GraphQL */ `
	mutation VerifyDomain($id: ID!) {
		verifyDomain(id: $id) {
			__typename
			... on Domain {
				id
				domain
				verified
			}
			... on UserError {
				code
				message
				details {
					path
					message
				}
			}
		}
	}
`;

const DELETE_DOMAIN = /* GraphQL */ `
	mutation DeleteDomain($id: ID!) {
		deleteDomain(id: $id) {
			__typename
			... on Domain {
				id
				domain
			}
			... on UserError {
				code
				message
			}
		}
	}
`;

const CREATE_CONNECTION = /* GraphQL */ `
	mutation CreateSsoConnection($input: CreateSsoConnectionInput!) {
		createSsoConnection(input: $input) {
			__typename
			... on SsoConnection {
				id
				name
			}
			... on UserError {
				code
				message
				details {
					path
					message
				}
			}
		}
	}
`;

const UPDATE_CONNECTION = /* GraphQL */ `
	mutation UpdateSsoConnection($id: String!, $input: UpdateSsoConnectionInput!) {
		updateSsoConnection(id: $id, input: $input) {
			__typename
			... on SsoConnection {
				id
				name
				enabled
			}
			... on UserError {
				code
				message
				details {
					path
					message
				}
			}
		}
	}
`;

const DELETE_CONNECTION = /* GraphQL */ `
	mutation DeleteSsoConnection($id: String!) {
		deleteSsoConnection(id: $id)
	}
`;

export interface Domain {
	id: string;
	domain: string;
	verified: boolean;
	verifiedAt: string | null;
	checkedAt: string | null;
	createdAt: string;
	verification: { type: string; name: string; value: string };
}

interface Subscription {
	id: string;
	status: string;
	totalSeats: number;
	assignedSeats: number;
	product: { name: string };
}

type Saved = { __typename: 'SsoConnection'; id: string; name: string; enabled?: boolean };
type DomainResult = { __typename: 'Domain'; id: string; domain: string; verified?: boolean } | UserError;

/** The panel a link of the lists opened (?edit=, ?delete=, ?deleteDomain=), with what it is about. */
type Panel =
	| { kind: 'edit'; connection: Connection }
	| { kind: 'delete'; connection: Connection }
	| { kind: 'deleteDomain'; domain: Domain };

async function openPanel(event: RequestEvent, organizationId: string, domains: Domain[]): Promise<Panel | null> {
	const params = event.url.searchParams;
	const domainId = params.get('deleteDomain');
	if (domainId !== null) {
		const domain = domains.find((d) => d.id === domainId);
		return domain ? { kind: 'deleteDomain', domain } : null;
	}
	const kind = (['edit', 'delete'] as const).find((k) => params.has(k));
	if (!kind) return null;
	// Gone (just deleted, with the link still in the address bar) or another organization's: no panel.
	const connection = await findConnection(event, params.get(kind) ?? '', organizationId, event.locals.platformAdmin);
	return connection ? { kind, connection } : null;
}

/**
 * Why an admin's test sign-in failed: /sso/* sends the admin back here as ?test_error=<reason> (the stable reasons of
 * docs/architecture.md#single-sign-on), in the page's words, for an admin checking a connection.
 */
const TEST_ERRORS: Record<string, string> = {
	idp_error:
		'The identity provider refused the test sign-in or could not be reached. Check the issuer, client ID and secret, and the redirect URI registered there.',
	invalid_response:
		"The identity provider's answer did not pass the checks (signature, issuer, audience, times or recipient). Check the certificate, the entity ID and the URLs given to the provider.",
	no_email: 'The identity provider sent no e-mail address: release the email claim (or attribute) to this application.',
	expired_request: 'The test took longer than 10 minutes or was already used. Start it again.',
	wrong_browser: 'The test came back to another browser or window. Start it again here.',
	unknown_connection: 'That connection is not there any more.',
	forbidden: "Only the owners and admins of the connection's organization can test it.",
	rate_limited: 'Too many attempts. Please wait a moment and try again.',
};

const testErrorOf = (url: URL): string | null => {
	const reason = url.searchParams.get('test_error');
	if (reason === null) return null;
	return Object.hasOwn(TEST_ERRORS, reason)
		? TEST_ERRORS[reason]!
		: "The test sign-in did not work. Check the connection's settings and try again.";
};

/**
 * An organization's single sign-on (docs/architecture.md#single-sign-on): its domains, proven by a DNS TXT record,
 * and its connections to identity providers for the verified ones; for platform admins also the platform-wide
 * providers offered on /login to everyone.
 */
export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not these queries' errors.
	const { organization } = await event.parent();
	const platformAdmin = event.locals.platformAdmin;
	const [domains, { ssoConnections, subscriptions }, platform] = await Promise.all([
		listPage<Domain>(event, DOMAINS, 'domains', { org: organization.id, limit: DOMAIN_PAGE }, 'domains'),
		gql<{ ssoConnections: Connection[]; subscriptions: { items: Subscription[] } }>(event, CONNECTIONS, {
			org: organization.id,
		}),
		platformAdmin
			? gql<{ ssoConnections: Connection[] }>(event, PLATFORM_CONNECTIONS).then((d) => d.ssoConnections)
			: null,
	]);
	// Who controls sign-in controls the organization: only owners change these (docs/architecture.md#single-sign-on).
	const canChange = actsAsOwner(event.locals);
	const panel = canChange ? await openPanel(event, organization.id, domains.items) : null;
	return {
		canChange,
		domains: domains.items,
		cursor: domains.cursor,
		nextCursor: domains.nextCursor,
		verifiedDomains: domains.items.filter((d) => d.verified).map((d) => d.domain),
		connections: ssoConnections,
		subscriptions: subscriptions.items.map((s) => ({
			id: s.id,
			label: `${s.product.name} (${s.status}, ${s.assignedSeats} of ${s.totalSeats} seats taken)`,
		})),
		platformConnections: platform,
		testError: testErrorOf(event.url),
		panel:
			panel?.kind === 'edit'
				? { kind: 'edit' as const, connection: panel.connection, values: connectionFormValues(panel.connection) }
				: panel,
		// The roles a connection may give: every one, since only owners see its form.
		roles: ROLES,
	};
};

/** A refused connection form: problems go under their fields, the message says which form to correct. */
function refusedConnection(result: UserError, failed: string) {
	return {
		message: result.code === 'invalid_request' ? `${failed}: correct the fields marked below.` : result.message,
		errors: fieldErrors(result.details, CONNECTION_LABELS),
	};
}

type FormAnswer<T extends object> = Promise<T | ActionFailure<T & { message: string }>>;

/** The connection form read and checked as far as the page can: a role map that is not `value = role` lines. */
function readChecked(form: FormData, fallbackType: ConnectionType) {
	const values = readConnectionForm(form, fallbackType);
	const { map, problems } = parseRoleMap(values.roleMap);
	return { values, secret: field(form, 'clientSecret'), roleMap: map, problems };
}

type ConnectionAction = 'create' | 'update' | 'createPlatform';
interface ConnectionAnswer {
	action: ConnectionAction;
	id?: string;
	values?: ConnectionFormValues;
	errors?: FieldErrors;
	saved?: { id: string; name: string };
}

/** Creates a connection, the organization's or (platform: true) a platform-wide one. */
async function create(event: RequestEvent, platform: boolean): FormAnswer<ConnectionAnswer> {
	const { organizationId } = requireOrgAdmin(event);
	const action: ConnectionAction = platform ? 'createPlatform' : 'create';
	const { values, secret, roleMap, problems } = readChecked(await event.request.formData(), 'oidc');
	const allowed: ConnectionType[] = platform ? ['oidc', 'github'] : ['oidc', 'saml'];
	if (!allowed.includes(values.type)) {
		return fail(400, {
			action,
			values,
			message: 'The connection was not added: correct the fields marked below.',
			errors: { type: [`must be ${allowed.join(' or ')}`] } as FieldErrors,
		});
	}
	if (problems.length)
		return fail(400, {
			action,
			values,
			message: 'The connection was not added: correct the fields marked below.',
			errors: { roleMap: problems } as FieldErrors,
		});
	const input = {
		type: values.type,
		...(platform ? { platform: true } : { organizationId }),
		...connectionInput(values, secret, roleMap, { platform, edit: false }),
	};
	let result: Saved | UserError;
	try {
		({ createSsoConnection: result } = await gql<{ createSsoConnection: typeof result }>(event, CREATE_CONNECTION, {
			input,
		}));
	} catch (err) {
		return refused(
			err,
			{ action, values, errors: {} as FieldErrors },
			platform ? { forbidden: 'Only platform administrators can add sign-in for the whole platform.' } : {},
		);
	}
	if (result.__typename === 'UserError')
		return fail(userErrorStatus(result), {
			action,
			values,
			...refusedConnection(result, 'The connection was not added'),
		});
	return { action, saved: { id: result.id, name: result.name } };
}

export const actions: Actions = {
	addDomain: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const domain = field(await event.request.formData(), 'domain');
		let result: DomainResult;
		try {
			({ addDomain: result } = await gql<{ addDomain: DomainResult }>(event, ADD_DOMAIN, {
				input: { domain, organizationId },
			}));
		} catch (err) {
			return refused(err, { action: 'addDomain' as const, domain, problems: [] as string[] });
		}
		if (result.__typename === 'UserError') {
			const message = result.code === 'invalid_request' ? 'The domain was not added.' : result.message;
			const problems = result.code === 'invalid_request' ? (result.details ?? []).map((d) => d.message) : [];
			return fail(userErrorStatus(result), { action: 'addDomain' as const, domain, message, problems });
		}
		return { action: 'addDomain' as const, added: { id: result.id, domain: result.domain } };
	},

	/** Looks the TXT record up now; a miss says what was found, so that the person can fix their DNS. */
	verifyDomain: async (event) => {
		requireOrgAdmin(event);
		const id = field(await event.request.formData(), 'id');
		let result: DomainResult;
		try {
			({ verifyDomain: result } = await gql<{ verifyDomain: DomainResult }>(event, VERIFY_DOMAIN, { id }));
		} catch (err) {
			return refused(
				err,
				{ action: 'verifyDomain' as const, id },
				{ not_found: 'No such domain in this organization.' },
			);
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'verifyDomain' as const, id, message: result.message });
		return { action: 'verifyDomain' as const, id, verified: { domain: result.domain } };
	},

	deleteDomain: async (event) => {
		requireOrgAdmin(event);
		const form = await event.request.formData();
		if (form.get('confirm') !== 'yes')
			return fail(400, { action: 'deleteDomain' as const, message: 'Confirm which domain is to be removed.' });
		let result: DomainResult;
		try {
			({ deleteDomain: result } = await gql<{ deleteDomain: DomainResult }>(event, DELETE_DOMAIN, {
				id: field(form, 'id'),
			}));
		} catch (err) {
			return refused(err, { action: 'deleteDomain' as const }, { not_found: 'No such domain in this organization.' });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'deleteDomain' as const, message: result.message });
		return { action: 'deleteDomain' as const, deleted: { domain: result.domain } };
	},

	create: (event) => create(event, false),

	createPlatform: (event) => create(event, true),

	update: async (event): FormAnswer<ConnectionAnswer> => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const id = field(form, 'id');
		let connection: Connection | null;
		try {
			connection = await findConnection(event, id, organizationId, event.locals.platformAdmin);
		} catch (err) {
			return refused(err, { action: 'update' as const, id, errors: {} as FieldErrors });
		}
		if (!connection) return fail(404, { action: 'update' as const, id, message: NOT_FOUND, errors: {} as FieldErrors });
		const { values, secret, roleMap, problems } = readChecked(form, connection.type);
		// The kind of a connection stays what it was made as.
		values.type = connection.type;
		const platform = connection.organizationId === null;
		if (problems.length)
			return fail(400, {
				action: 'update' as const,
				id,
				values,
				message: 'The changes were not saved: correct the fields marked below.',
				errors: { roleMap: problems } as FieldErrors,
			});
		let result: Saved | UserError;
		try {
			({ updateSsoConnection: result } = await gql<{ updateSsoConnection: typeof result }>(event, UPDATE_CONNECTION, {
				id,
				input: connectionInput(values, secret, roleMap, { platform, edit: true }),
			}));
		} catch (err) {
			return refused(err, { action: 'update' as const, id, values, errors: {} as FieldErrors });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), {
				action: 'update' as const,
				id,
				values,
				...refusedConnection(result, 'The changes were not saved'),
			});
		return { action: 'update' as const, saved: { id: result.id, name: result.name } };
	},

	/** Switched off, a connection's sign-ins stop at once; switched on, they work again. */
	setEnabled: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const enabled = field(form, 'enabled') === 'true';
		let result: Saved | UserError;
		try {
			if (!(await findConnection(event, field(form, 'id'), organizationId, event.locals.platformAdmin)))
				return fail(404, { action: 'setEnabled' as const, message: NOT_FOUND });
			({ updateSsoConnection: result } = await gql<{ updateSsoConnection: typeof result }>(event, UPDATE_CONNECTION, {
				id: field(form, 'id'),
				input: { enabled },
			}));
		} catch (err) {
			return refused(err, { action: 'setEnabled' as const });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'setEnabled' as const, message: result.message });
		return { action: 'setEnabled' as const, changed: { name: result.name, enabled: result.enabled ?? enabled } };
	},

	delete: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		if (form.get('confirm') !== 'yes')
			return fail(400, { action: 'delete' as const, message: 'Confirm which connection is to be deleted.' });
		try {
			const connection = await findConnection(event, field(form, 'id'), organizationId, event.locals.platformAdmin);
			if (!connection) return fail(404, { action: 'delete' as const, message: NOT_FOUND });
			await gql(event, DELETE_CONNECTION, { id: connection.id });
			return { action: 'delete' as const, deleted: { name: connection.name } };
		} catch (err) {
			return refused(err, { action: 'delete' as const });
		}
	},
};
