// What the single sign-on settings share (docs/architecture.md#single-sign-on): a connection's fields, finding one
// that this page may act on, and the connection form read into the operation's input.
import type { RequestEvent } from '@sveltejs/kit';
import { gql, graphql, GraphQLRequestError, type ResultOf, type Role } from '#lib/server/graphql.ts';

type GqlEvent = Pick<RequestEvent, 'platform' | 'cookies'>;

/** The kinds of connection these pages make and edit. */
const CONNECTION_TYPES = ['oidc', 'saml', 'github'] as const;
export type ConnectionType = (typeof CONNECTION_TYPES)[number];

/** Everything shown of a connection: never its client secret, only whether it has one. */
export const CONNECTION_FIELDS = graphql(`
	fragment SsoConnectionFields on SsoConnection {
		id
		organizationId
		type
		name
		enabled
		domains
		defaultRole
		requireSso
		seatSubscriptionId
		roleClaim
		roleMap
		issuer
		clientId
		hasClientSecret
		scopes
		entryPoint
		idpEntityId
		idpCertificates
		callbackUrl
		acsUrl
		metadataUrl
		createdAt
	}
`);

/** A connection as a form edits it: of a kind the form knows. */
export type Connection = Omit<ResultOf<typeof CONNECTION_FIELDS>, 'type'> & { type: ConnectionType };

/** The connection, its kind checked to be one of CONNECTION_TYPES (the service's `type` is a string). */
export function knownKind(connection: ResultOf<typeof CONNECTION_FIELDS>): Connection {
	const type = CONNECTION_TYPES.find((t) => t === connection.type);
	if (!type) throw new Error(`Connection ${connection.id} is of a kind these pages do not know: ${connection.type}`);
	return { ...connection, type };
}

const CONNECTION = graphql(
	`
		query SsoConnection($id: String!) {
			ssoConnection(id: $id) {
				...SsoConnectionFields
			}
		}
	`,
	[CONNECTION_FIELDS],
);

/** What an edit or create sends: the settings of UpdateSsoConnectionInput, which CreateSsoConnectionInput adds to. */
type ConnectionInput = ReturnType<typeof graphql.scalar<'UpdateSsoConnectionInput'>>;

export const NOT_FOUND = 'No such connection here.';

/**
 * Connection `id` if this page may act on it: one of organization `organizationId`'s, or for a platform admin a
 * platform-wide one. Gone, another organization's (which a platform admin may read through GraphQL) or an
 * identifier the service refuses outright are none; other refusals go on.
 */
export async function findConnection(
	event: GqlEvent,
	id: string,
	organizationId: string,
	platformAdmin: boolean,
): Promise<Connection | null> {
	if (!id || id.length > 200) return null;
	try {
		const { ssoConnection } = await gql(event, CONNECTION, { id });
		const ours =
			ssoConnection.organizationId === organizationId || (ssoConnection.organizationId === null && platformAdmin);
		return ours ? knownKind(ssoConnection) : null;
	} catch (err) {
		if (err instanceof GraphQLRequestError && (err.code === 'not_found' || err.code === 'invalid_request')) return null;
		throw err;
	}
}

export const ROLES = ['member', 'admin', 'owner'] as const satisfies readonly Role[];

/** The connection form as typed, so that a refused submission shows it again (never the client secret). */
export interface ConnectionFormValues {
	type: ConnectionType;
	name: string;
	issuer: string;
	clientId: string;
	scopes: string;
	metadataXml: string;
	entryPoint: string;
	idpCert: string;
	idpEntityId: string;
	domains: string[];
	defaultRole: string;
	requireSso: boolean;
	seatSubscriptionId: string;
	roleClaim: string;
	roleMap: string;
}

/** The form's fields by their GraphQL names, with the labels the form shows them under. */
export const CONNECTION_LABELS = {
	name: 'Name',
	issuer: 'Issuer URL',
	clientId: 'Client ID',
	clientSecret: 'Client secret',
	scopes: 'Scopes',
	metadataXml: 'IdP metadata XML',
	entryPoint: 'Sign-in URL',
	idpCert: 'Signing certificate',
	idpEntityId: 'IdP entity ID',
	domains: 'Domains',
	defaultRole: 'Default role',
	requireSso: 'Require SSO',
	seatSubscriptionId: 'Seats from',
	roleClaim: 'Role claim',
	roleMap: 'Role map',
} as const;

const text = (form: FormData, name: string) => {
	const value = form.get(name);
	return typeof value === 'string' ? value.trim() : '';
};

export function readConnectionForm(form: FormData, fallbackType: ConnectionType): ConnectionFormValues {
	const type = text(form, 'type');
	return {
		type: CONNECTION_TYPES.find((t) => t === type) ?? fallbackType,
		name: text(form, 'name'),
		issuer: text(form, 'issuer'),
		clientId: text(form, 'clientId'),
		scopes: text(form, 'scopes'),
		metadataXml: text(form, 'metadataXml'),
		entryPoint: text(form, 'entryPoint'),
		idpCert: text(form, 'idpCert'),
		idpEntityId: text(form, 'idpEntityId'),
		domains: form.getAll('domains').filter((v): v is string => typeof v === 'string'),
		defaultRole: text(form, 'defaultRole') || 'member',
		requireSso: form.get('requireSso') === 'on',
		seatSubscriptionId: text(form, 'seatSubscriptionId'),
		roleClaim: text(form, 'roleClaim'),
		roleMap: text(form, 'roleMap'),
	};
}

/** A connection's stored settings as the form shows them. */
export function connectionFormValues(c: Connection): ConnectionFormValues {
	return {
		type: c.type,
		name: c.name,
		issuer: c.issuer ?? '',
		clientId: c.clientId ?? '',
		scopes: c.scopes.join(' '),
		metadataXml: '',
		entryPoint: c.entryPoint ?? '',
		idpCert: '',
		idpEntityId: c.idpEntityId ?? '',
		domains: c.domains,
		defaultRole: c.defaultRole,
		requireSso: c.requireSso,
		seatSubscriptionId: c.seatSubscriptionId ?? '',
		roleClaim: c.roleClaim ?? '',
		roleMap: roleMapText(c.roleMap),
	};
}

/** The role map (JSON: value -> role) as the form's lines, `value = role`. */
export const roleMapText = (map: unknown) =>
	typeof map === 'object' && map !== null
		? Object.entries(map)
				.flatMap(([value, role]) => (typeof role === 'string' ? [`${value} = ${role}`] : []))
				.join('\n')
		: '';

/**
 * The role map's lines (`value = role`, blank lines and `#` comments skipped) as the JSON the service takes. A
 * value may itself hold "=" (a group's DN): the role is after the last one.
 */
export function parseRoleMap(text: string): { map: Record<string, Role> | null; problems: string[] } {
	const map: Record<string, Role> = {};
	const problems: string[] = [];
	text.split(/\r?\n/).forEach((raw, i) => {
		const line = raw.trim();
		if (!line || line.startsWith('#')) return;
		const at = line.lastIndexOf('=');
		const value = at > 0 ? line.slice(0, at).trim() : '';
		const role =
			at > 0
				? line
						.slice(at + 1)
						.trim()
						.toLowerCase()
				: '';
		if (!value || !role) problems.push(`line ${i + 1} must read value = role, such as “engineering-leads = admin”`);
		else {
			const known = ROLES.find((r) => r === role);
			if (known) map[value] = known;
			else problems.push(`line ${i + 1}: “${role}” is not a role: use owner, admin or member`);
		}
	});
	return { map: Object.keys(map).length ? map : null, problems };
}

/** The scopes as typed (spaces or commas between them), or none when left empty. */
const scopeList = (scopes: string) => scopes.split(/[\s,]+/).filter(Boolean);

/**
 * The operation's input for the form's values: only the settings of the connection's kind (the service refuses
 * another kind's by name), and on an edit only what was typed of what stays hidden (the secret, the SAML metadata
 * and certificate: left empty, they are kept). `roleMap` is the parsed role map.
 */
export function connectionInput(
	values: ConnectionFormValues,
	secret: string,
	roleMap: Record<string, Role> | null,
	options: { platform: boolean; edit: boolean },
): ConnectionInput {
	const input: ConnectionInput = { name: values.name };
	const given = (key: 'clientSecret' | 'metadataXml' | 'entryPoint' | 'idpCert' | 'idpEntityId', value: string) => {
		if (value) input[key] = value;
	};
	if (values.type === 'oidc' || values.type === 'github') {
		if (values.type === 'oidc' || values.issuer) input.issuer = values.issuer;
		input.clientId = values.clientId;
		given('clientSecret', secret);
		if (values.type === 'oidc' && values.scopes) input.scopes = scopeList(values.scopes);
	} else {
		given('metadataXml', values.metadataXml);
		given('entryPoint', values.entryPoint);
		given('idpCert', values.idpCert);
		given('idpEntityId', values.idpEntityId);
	}
	if (!options.platform) {
		input.domains = values.domains;
		const defaultRole = ROLES.find((r) => r === values.defaultRole);
		if (defaultRole) input.defaultRole = defaultRole;
		input.requireSso = values.requireSso;
		// Cleared on an edit as null; left out of a new connection.
		if (values.seatSubscriptionId || options.edit) input.seatSubscriptionId = values.seatSubscriptionId || null;
		if (values.roleClaim || options.edit) input.roleClaim = values.roleClaim || null;
		if (roleMap || options.edit) input.roleMap = roleMap;
	}
	return input;
}
