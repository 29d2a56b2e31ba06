import { error, fail } from '@sveltejs/kit';
import { userErrorFailure } from '#lib/server/errors.ts';
import { requireOrgAdmin } from '#lib/server/gates.ts';
import { gql, type UserError } from '#lib/server/graphql.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';
import { formText } from '#lib/form.ts';

interface App {
	id: string;
	name: string;
	description: string;
	webhookUrl: string;
	redirectUris: string[];
	scopes: string[];
	homepageUrl: string | null;
}
interface Installation {
	id: string;
	appId: string;
	clientId: string;
	installedAt: string;
}
type Result<T> = T | UserError;

const APP_FIELDS = 'id name description webhookUrl redirectUris scopes homepageUrl';
const LOAD = `query($org: String) { apps(limit: 100) { items { ${APP_FIELDS} } } installations(organizationId: $org, limit: 100) { items { id appId clientId installedAt } } }`;
const USER_ERROR = '... on UserError { code message details { path message } }';
const WITH_SECRET = `... on AppWithSecret { signingSecret app { id name } }`;
const CREATE = `mutation($input: CreateAppInput!) { createApp(input: $input) { __typename ${WITH_SECRET} ${USER_ERROR} } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateAppInput!) { updateApp(id: $id, input: $input) { __typename ... on App { id name } ${USER_ERROR} } }`;
const ROTATE = `mutation($id: ID!) { rotateAppSecret(id: $id) { __typename ${WITH_SECRET} ${USER_ERROR} } }`;
const DELETE = `mutation($id: ID!) { deleteApp(id: $id) { __typename ${USER_ERROR} } }`;
const INSTALL = `mutation($id: ID!, $org: String) { installApp(appId: $id, organizationId: $org) { __typename ... on Installation { id app { name } } ${USER_ERROR} } }`;
const UNINSTALL = `mutation($id: ID!) { uninstallApp(id: $id) { __typename ... on Installation { id app { name } } ${USER_ERROR} } }`;

export const load: PageServerLoad = async (event) => {
	const { organization } = await event.parent();
	const data = await gql<{ apps: { items: App[] }; installations: { items: Installation[] } }>(event, LOAD, {
		org: organization.id,
	});
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

const failure = (result: { __typename: string }, values: Record<string, unknown> = {}) =>
	result.__typename === 'UserError' ? userErrorFailure(result as UserError, { values }, LABELS) : null;

export const actions: Actions = {
	create: async (event) => {
		requirePlatformAdmin(event);
		const values = readApp(await event.request.formData());
		const { createApp } = await gql<{
			createApp: Result<{ __typename: 'AppWithSecret'; signingSecret: string; app: { name: string } }>;
		}>(event, CREATE, { input: values });
		if (createApp.__typename === 'UserError') return failure(createApp, values);
		const r = createApp as { signingSecret: string; app: { name: string } };
		return { done: `App ${r.app.name} registered.`, secret: { app: r.app.name, value: r.signingSecret } };
	},
	update: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		const values = readApp(form);
		const { updateApp } = await gql<{ updateApp: Result<{ __typename: 'App' }> }>(event, UPDATE, {
			id: formText(form, 'id'),
			input: values,
		});
		return failure(updateApp, values) ?? { done: `App ${values.name} saved.` };
	},
	rotate: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		const { rotateAppSecret } = await gql<{
			rotateAppSecret: Result<{ __typename: 'AppWithSecret'; signingSecret: string; app: { name: string } }>;
		}>(event, ROTATE, { id: formText(form, 'id') });
		if (rotateAppSecret.__typename === 'UserError') return failure(rotateAppSecret);
		const r = rotateAppSecret as { signingSecret: string; app: { name: string } };
		return {
			done: `A new signing secret for ${r.app.name}: the old one no longer signs.`,
			secret: { app: r.app.name, value: r.signingSecret },
		};
	},
	delete: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		if (form.get('confirm') !== 'yes')
			return fail(400, { message: 'Tick the box to confirm the deletion.', problems: [] });
		const { deleteApp } = await gql<{ deleteApp: Result<{ __typename: string }> }>(event, DELETE, {
			id: formText(form, 'id'),
		});
		return failure(deleteApp) ?? { done: `App ${formText(form, 'name')} deleted.` };
	},
	install: async (event) => {
		requireAdmin(event);
		const form = await event.request.formData();
		const { installApp } = await gql<{ installApp: Result<{ __typename: 'Installation'; app: { name: string } }> }>(
			event,
			INSTALL,
			{
				id: formText(form, 'id'),
				org: event.locals.organization?.id,
			},
		);
		if (installApp.__typename === 'UserError') return failure(installApp);
		return {
			done: `${(installApp as { app: { name: string } }).app.name} is installed: members can open it from their apps page.`,
		};
	},
	uninstall: async (event) => {
		requireAdmin(event);
		const form = await event.request.formData();
		const { uninstallApp } = await gql<{ uninstallApp: Result<{ __typename: 'Installation'; app: { name: string } }> }>(
			event,
			UNINSTALL,
			{ id: formText(form, 'id') },
		);
		if (uninstallApp.__typename === 'UserError') return failure(uninstallApp);
		return { done: `${(uninstallApp as { app: { name: string } }).app.name} is uninstalled: its access ended.` };
	},
};
