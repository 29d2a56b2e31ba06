import type { IncomingMessage } from 'node:http';
import type { Role, TesseraBridge } from '#lib/server/graphql.ts';

declare global {
	namespace App {
		interface Platform {
			/** The Node request; Koa attaches the in-process GraphQL bridge as `tessera`. */
			req: IncomingMessage & { tessera?: TesseraBridge };
		}

		/** The session, resolved once per request in hooks.server.ts. */
		interface Locals {
			/** The signed-in user; null when signed out. */
			user: { id: string; email: string; name: string | null } | null;
			/** The session's current organization; null when signed out or not a member of any. */
			organization: { id: string; name: string } | null;
			/** The user's role in `organization`. */
			role: Role | null;
			platformAdmin: boolean;
			/**
			 * The current organization requires a second factor and the person has none: every page but the one that
			 * sets it up sends them there (docs/architecture.md#second-factors).
			 */
			mfaEnrollmentRequired: boolean;
			/** Every organization the user belongs to, with the role there (the header's switcher). */
			organizations: { id: string; name: string; role: Role | null }[];
		}
	}
}

export {};
