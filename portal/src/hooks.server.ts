import type { Handle } from '@sveltejs/kit/hooks';
import { gql, sessionToken, type Role } from '#lib/server/graphql.ts';
import { clearSessionCookie } from '#lib/server/session.ts';

const VIEWER = /* GraphQL */ `
	query Viewer {
		viewer {
			user { id email name }
			organization { id name role }
			platformAdmin
			organizations { id name role }
		}
	}
`;

interface ViewerData {
	viewer: {
		user: { id: string; email: string; name: string | null };
		organization: { id: string; name: string; role: Role } | null;
		platformAdmin: boolean;
		organizations: { id: string; name: string; role: Role }[];
	} | null;
}

/** Resolves the session once per request into `locals`; routes only read `locals`. */
export const handle: Handle = async ({ event, resolve }) => {
	event.locals.user = null;
	event.locals.organization = null;
	event.locals.role = null;
	event.locals.platformAdmin = false;

	if (sessionToken(event)) {
		const { viewer } = await gql<ViewerData>(event, VIEWER);
		if (viewer) {
			event.locals.user = viewer.user;
			if (viewer.organization) {
				const { role, ...organization } = viewer.organization;
				event.locals.organization = organization;
				event.locals.role = role;
			}
			event.locals.platformAdmin = viewer.platformAdmin;
		} else {
			// Expired or revoked: drop the stale cookie.
			clearSessionCookie(event);
		}
	}

	return resolve(event);
};
