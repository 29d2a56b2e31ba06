import { fail, type ActionFailure } from '@sveltejs/kit';
import { reasonMessage, userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import {
	actsAsOwner,
	field,
	fieldErrors,
	refused,
	type FieldErrors,
	requireOrgAdmin,
	SEAT_SUBSCRIPTIONS,
	seatChoice,
	type UserError,
} from '../settings.server.ts';
import {
	CONNECTION_FIELDS,
	CONNECTION_LABELS,
	connectionFormValues,
	connectionInput,
	findConnection,
	knownKind,
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

const DOMAINS = graphql(`
	query Domains($org: String, $limit: Int, $cursor: String) {
		domains(organizationId: $org, limit: $limit, cursor: $cursor) {
			items {
				id
				domain
				verified
				verifiedAt
				checkedAt
				createdAt
				verification {
					type
					name
					value
				}
			}
			nextCursor
		}
	}
`);

const CONNECTIONS = graphql(
	`
		query SsoConnections($org: String!) {
			ssoConnections(organizationId: $org) {
				...SsoConnectionFields
			}
			...SeatSubscriptions
		}
	`,
	[CONNECTION_FIELDS, SEAT_SUBSCRIPTIONS],
);

const PLATFORM_CONNECTIONS = graphql(
	`
		query PlatformConnections {
			ssoConnections(platform: true) {
				...SsoConnectionFields
			}
		}
	`,
	[CONNECTION_FIELDS],
);

/** What the domain mutations answer: the domain, or why not. */
const DOMAIN_RESULT = graphql(`
	fragment DomainResultFields on Domain {
		id
		domain
		verified
	}
`);

const ADD_DOMAIN = graphql(
	`
		mutation AddDomain($input: AddDomainInput!) {
			addDomain(input: $input) {
				__typename
				...DomainResultFields
				...UserErrorFields
			}
		}
	`,
	[DOMAIN_RESULT, USER_ERROR_FIELDS],
);

const VERIFY_DOMAIN = graphql(
	`
		mutation VerifyDomain($id: ID!) {
			verifyDomain(id: $id) {
				__typename
				...DomainResultFields
				...UserErrorFields
			}
		}
	`,
	[DOMAIN_RESULT, USER_ERROR_FIELDS],
);

const DELETE_DOMAIN = graphql(
	`
		mutation DeleteDomain($id: ID!) {
			deleteDomain(id: $id) {
				__typename
				...DomainResultFields
				...UserErrorFields
			}
		}
	`,
	[DOMAIN_RESULT, USER_ERROR_FIELDS],
);

/** What the connection mutations answer: the connection saved, or why not. */
const SAVED_CONNECTION = graphql(`
	fragment SavedConnectionFields on SsoConnection {
		id
		name
		enabled
	}
`);

const CREATE_CONNECTION = graphql(
	`
		mutation CreateSsoConnection($input: CreateSsoConnectionInput!) {
			createSsoConnection(input: $input) {
				__typename
				...SavedConnectionFields
				...UserErrorFields
			}
		}
	`,
	[SAVED_CONNECTION, USER_ERROR_FIELDS],
);

const UPDATE_CONNECTION = graphql(
	`
		mutation UpdateSsoConnection($id: String!, $input: UpdateSsoConnectionInput!) {
			updateSsoConnection(id: $id, input: $input) {
				__typename
				...SavedConnectionFields
				...UserErrorFields
			}
		}
	`,
	[SAVED_CONNECTION, USER_ERROR_FIELDS],
);

const DELETE_CONNECTION = graphql(`
	mutation DeleteSsoConnection($id: String!) {
		deleteSsoConnection(id: $id)
	}
`);

type Domain = ResultOf<typeof DOMAINS>['domains']['items'][number];
type DomainResult = ResultOf<typeof ADD_DOMAIN>['addDomain'];
type Saved = ResultOf<typeof UPDATE_CONNECTION>['updateSsoConnection'];

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

const TEST_FAILED = "The test sign-in did not work. Check the connection's settings and try again.";

const testErrorOf = (url: URL) => reasonMessage(url.searchParams.get('test_error'), TEST_ERRORS, TEST_FAILED);

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
		listPage(event, DOMAINS, 'domains', { org: organization.id, limit: DOMAIN_PAGE }, 'domains'),
		gql(event, CONNECTIONS, { org: organization.id }),
		platformAdmin ? gql(event, PLATFORM_CONNECTIONS).then((d) => d.ssoConnections.map(knownKind)) : null,
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
		connections: ssoConnections.map(knownKind),
		subscriptions: subscriptions.items.map(seatChoice),
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

/**
 * The connection form read and checked as far as the page can: a role map of `value = role` lines, a default role
 * that is one. `errors` is empty when the form passed.
 */
function readChecked(form: FormData, fallbackType: ConnectionType) {
	const values = readConnectionForm(form, fallbackType);
	const { map, problems } = parseRoleMap(values.roleMap);
	const errors: FieldErrors = {};
	if (problems.length) errors.roleMap = problems;
	if (!ROLES.some((r) => r === values.defaultRole)) errors.defaultRole = ['must be owner, admin or member'];
	return { values, secret: field(form, 'clientSecret'), roleMap: map, errors };
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
	const { values, secret, roleMap, errors } = readChecked(await event.request.formData(), 'oidc');
	const allowed: ConnectionType[] = platform ? ['oidc', 'github'] : ['oidc', 'saml'];
	if (!allowed.includes(values.type)) {
		return fail(400, {
			action,
			values,
			message: 'The connection was not added: correct the fields marked below.',
			errors: { type: [`must be ${allowed.join(' or ')}`] } as FieldErrors,
		});
	}
	if (Object.keys(errors).length)
		return fail(400, {
			action,
			values,
			message: 'The connection was not added: correct the fields marked below.',
			errors,
		});
	const input = {
		type: values.type,
		...(platform ? { platform: true } : { organizationId }),
		...connectionInput(values, secret, roleMap, { platform, edit: false }),
	};
	let result: ResultOf<typeof CREATE_CONNECTION>['createSsoConnection'];
	try {
		({ createSsoConnection: result } = await gql(event, CREATE_CONNECTION, { input }));
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
			({ addDomain: result } = await gql(event, ADD_DOMAIN, {
				input: { domain, organizationId },
			}));
		} catch (err) {
			return refused(err, { action: 'addDomain' as const, domain, problems: [] as string[] });
		}
		if (result.__typename === 'UserError') {
			const message = result.code === 'invalid_request' ? 'The domain was not added.' : result.message;
			const problems = result.code === 'invalid_request' ? result.details.map((d) => d.message) : [];
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
			({ verifyDomain: result } = await gql(event, VERIFY_DOMAIN, { id }));
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
			({ deleteDomain: result } = await gql(event, DELETE_DOMAIN, {
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
		const { values, secret, roleMap, errors } = readChecked(form, connection.type);
		// The kind of a connection stays what it was made as.
		values.type = connection.type;
		const platform = connection.organizationId === null;
		if (Object.keys(errors).length)
			return fail(400, {
				action: 'update' as const,
				id,
				values,
				message: 'The changes were not saved: correct the fields marked below.',
				errors,
			});
		let result: Saved;
		try {
			({ updateSsoConnection: result } = await gql(event, UPDATE_CONNECTION, {
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
		let result: Saved;
		try {
			if (!(await findConnection(event, field(form, 'id'), organizationId, event.locals.platformAdmin)))
				return fail(404, { action: 'setEnabled' as const, message: NOT_FOUND });
			({ updateSsoConnection: result } = await gql(event, UPDATE_CONNECTION, {
				id: field(form, 'id'),
				input: { enabled },
			}));
		} catch (err) {
			return refused(err, { action: 'setEnabled' as const });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'setEnabled' as const, message: result.message });
		return { action: 'setEnabled' as const, changed: { name: result.name, enabled: result.enabled } };
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
