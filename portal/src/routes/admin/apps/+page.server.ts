import { error, fail } from '@sveltejs/kit';
import { userErrorFailure } from '#lib/server/errors.ts';
import { requireOrgAdmin } from '#lib/server/gates.ts';
import { gql, graphql, USER_ERROR_FIELDS, type UserError } from '#lib/server/graphql.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';
import { formText } from '#lib/form.ts';

const LOAD = graphql(`
	query Apps($org: String) {
		apps(limit: 100) {
			items {
				id
				name
				description
				webhookUrl
				redirectUris
				scopes
				homepageUrl
			}
		}
		installations(organizationId: $org, limit: 100) {
			items {
				id
				appId
				clientId
				installedAt
			}
		}
	}
`);

/** What the create and rotate answers carry: the signing secret, shown this once. */
const WITH_SECRET = graphql(`
	fragment AppWithSecretFields on AppWithSecret {
		signingSecret
		app {
			id
			name
		}
	}
`);

const CREATE = graphql(
	`
		mutation CreateApp($input: CreateAppInput!) {
			createApp(input: $input) {
				__typename
				...AppWithSecretFields
				...UserErrorFields
			}
		}
	`,
	[WITH_SECRET, USER_ERROR_FIELDS],
);

const UPDATE = graphql(
	`
		mutation UpdateApp($id: ID!, $input: UpdateAppInput!) {
			updateApp(id: $id, input: $input) {
				__typename
				... on App {
					id
					name
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const ROTATE = graphql(
	`
		mutation RotateAppSecret($id: ID!) {
			rotateAppSecret(id: $id) {
				__typename
				...AppWithSecretFields
				...UserErrorFields
			}
		}
	`,
	[WITH_SECRET, USER_ERROR_FIELDS],
);

const DELETE = graphql(
	`
		mutation DeleteApp($id: ID!) {
			deleteApp(id: $id) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/** What the install and uninstall answers carry: the installation, named by its app. */
const INSTALLATION = graphql(`
	fragment InstallationFields on Installation {
		id
		app {
			name
		}
	}
`);

const INSTALL = graphql(
	`
		mutation InstallApp($id: ID!, $org: String) {
			installApp(appId: $id, organizationId: $org) {
				__typename
				...InstallationFields
				...UserErrorFields
			}
		}
	`,
	[INSTALLATION, USER_ERROR_FIELDS],
);

const UNINSTALL = graphql(
	`
		mutation UninstallApp($id: ID!) {
			uninstallApp(id: $id) {
				__typename
				...InstallationFields
				...UserErrorFields
			}
		}
	`,
	[INSTALLATION, USER_ERROR_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	const { organization } = await event.parent();
	const data = await gql(event, LOAD, { org: organization.id });
	return { apps: data.apps.items, installations: data.installations.items, canWrite: event.locals.platformAdmin };
};

/** Form actions skip the layout's gate: each checks the role it needs (the service checks again). */
const requireAdmin = (event: RequestEvent) => requireOrgAdmin(event, 'install apps');
function requirePlatformAdmin(event: RequestEvent) {
	requireAdmin(event);
	if (!event.locals.platformAdmin) error(403, 'Only platform administrators register and change apps.');
}

/** Lists are typed one per line or separated by spaces or commas. */
const list = (value: FormDataEntryValue | null) =>
	(typeof value === 'string' ? value : '').split(/[\s,]+/).filter(Boolean);

function readApp(form: FormData) {
	const homepage = formText(form, 'homepageUrl').trim();
	return {
		name: formText(form, 'name'),
		description: formText(form, 'description'),
		webhookUrl: formText(form, 'webhookUrl').trim(),
		redirectUris: list(form.get('redirectUris')),
		scopes: list(form.get('scopes')),
		homepageUrl: homepage || null,
	};
}

/** The forms' labels, by the GraphQL names of the app's fields: a problem names the field as the form does. */
const LABELS = {
	name: 'Name',
	description: 'Description',
	webhookUrl: 'Webhook URL',
	redirectUris: 'Redirect URIs',
	scopes: 'Scopes',
	homepageUrl: 'Homepage',
};

/** A UserError as the form's failure, each problem named as the form names its field. */
const failure = (result: UserError, values: Record<string, unknown> = {}) =>
	userErrorFailure(result, { values }, LABELS);

export const actions: Actions = {
	create: async (event) => {
		requirePlatformAdmin(event);
		const values = readApp(await event.request.formData());
		const { createApp } = await gql(event, CREATE, { input: values });
		if (createApp.__typename === 'UserError') return failure(createApp, values);
		const { app, signingSecret } = createApp;
		return { done: `App ${app.name} registered.`, secret: { app: app.name, value: signingSecret } };
	},
	update: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		const values = readApp(form);
		const { updateApp } = await gql(event, UPDATE, { id: formText(form, 'id'), input: values });
		if (updateApp.__typename === 'UserError') return failure(updateApp, values);
		return { done: `App ${values.name} saved.` };
	},
	rotate: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		const { rotateAppSecret } = await gql(event, ROTATE, { id: formText(form, 'id') });
		if (rotateAppSecret.__typename === 'UserError') return failure(rotateAppSecret);
		const { app, signingSecret } = rotateAppSecret;
		return {
			done: `A new signing secret for ${app.name}: the old one no longer signs.`,
			secret: { app: app.name, value: signingSecret },
		};
	},
	delete: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		if (form.get('confirm') !== 'yes')
			return fail(400, { message: 'Tick the box to confirm the deletion.', problems: [] });
		const { deleteApp } = await gql(event, DELETE, { id: formText(form, 'id') });
		if (deleteApp.__typename === 'UserError') return failure(deleteApp);
		return { done: `App ${formText(form, 'name')} deleted.` };
	},
	install: async (event) => {
		requireAdmin(event);
		const form = await event.request.formData();
		const { installApp } = await gql(event, INSTALL, {
			id: formText(form, 'id'),
			org: event.locals.organization?.id,
		});
		if (installApp.__typename === 'UserError') return failure(installApp);
		return { done: `${installApp.app.name} is installed: members can open it from their apps page.` };
	},
	uninstall: async (event) => {
		requireAdmin(event);
		const form = await event.request.formData();
		const { uninstallApp } = await gql(event, UNINSTALL, { id: formText(form, 'id') });
		if (uninstallApp.__typename === 'UserError') return failure(uninstallApp);
		return { done: `${uninstallApp.app.name} is uninstalled: its access ended.` };
	},
};
