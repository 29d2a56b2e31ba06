import type { RequestEvent } from '@sveltejs/kit';
import type { GraphQLResponse, TesseraBridge } from '../../../../server/portal-contract.ts';
import { STATUS_BY_CODE } from '../../../../server/errors/http.ts';

export type { GraphQLResponse, TesseraBridge };

export type Role = 'owner' | 'admin' | 'member';

export interface FieldProblem {
	path: string;
	message: string;
}

/** A mutation's typed refusal, a problem the user can correct, as `... on UserError` selects it. */
export type UserError = { __typename: 'UserError'; code: string; message: string; details?: FieldProblem[] };

type BridgeEvent = Pick<RequestEvent, 'platform' | 'cookies'>;

/**
 * A top-level GraphQL error (authorization, rate limit, bad input, internal), carrying its `extensions.code` and
 * the HTTP status the API gives that code (the one table, server/errors/http.ts): hooks.server.ts answers an
 * uncaught one with that status, so a caller's mistake is never a 500 page.
 */
export class GraphQLRequestError extends Error {
	readonly code: string | undefined;
	readonly status: number;
	readonly errors: NonNullable<GraphQLResponse['errors']>;

	constructor(errors: NonNullable<GraphQLResponse['errors']>) {
		super(errors.map((e) => e.message).join('; '));
		this.name = 'GraphQLRequestError';
		this.code = errors[0]?.extensions?.code;
		this.status = (this.code && STATUS_BY_CODE[this.code]) || 500;
		this.errors = errors;
	}
}

/** The bridge Koa attached to this request; the portal cannot work without it. */
export function bridge(event: Pick<RequestEvent, 'platform'>): TesseraBridge {
	const tessera = event.platform?.req.tessera;
	if (!tessera) {
		throw new Error('req.tessera is missing: the portal must be served by the Tessera Koa server');
	}
	return tessera;
}

/** The session token from the request's cookie, if any. */
export function sessionToken(event: BridgeEvent): string | undefined {
	return event.cookies.get(bridge(event).cookie.name);
}

/**
 * Runs one GraphQL operation as the current session (or anonymously) and returns its `data`.
 * Top-level errors throw GraphQLRequestError; typed errors in a mutation's result are plain data.
 */
export async function gql<TData>(
	event: BridgeEvent,
	document: string,
	variables?: Record<string, unknown>
): Promise<TData> {
	const result = await bridge(event).graphql(document, variables, {
		sessionToken: sessionToken(event) ?? null
	});
	if (result.errors?.length) throw new GraphQLRequestError(result.errors);
	if (result.data == null) throw new Error('GraphQL response carried neither data nor errors');
	return result.data as TData;
}
