import type { RequestEvent } from '@sveltejs/kit';

/** A GraphQL response, shaped as the HTTP endpoint would send it. */
export interface GraphQLResponse {
	data?: any;
	errors?: { message: string; extensions?: { code?: string } }[];
}

/**
 * What the Koa server attaches to each Node request (`req.tessera`) before handing it to the portal.
 * The portal never touches the database: every read and write is a GraphQL operation run in-process.
 */
export interface TesseraBridge {
	/** Executes a GraphQL operation as the holder of `sessionToken`, or anonymously. */
	graphql(
		document: string,
		variables?: Record<string, unknown>,
		credentials?: { sessionToken?: string | null }
	): Promise<GraphQLResponse>;
	cookie: { name: string; secure: boolean };
}

export type Role = 'owner' | 'admin' | 'member';

type BridgeEvent = Pick<RequestEvent, 'platform' | 'cookies'>;

/** A top-level GraphQL error (authorization, rate limit, internal), carrying its `extensions.code`. */
export class GraphQLRequestError extends Error {
	readonly code: string | undefined;
	readonly errors: NonNullable<GraphQLResponse['errors']>;

	constructor(errors: NonNullable<GraphQLResponse['errors']>) {
		super(errors.map((e) => e.message).join('; '));
		this.name = 'GraphQLRequestError';
		this.code = errors[0]?.extensions?.code;
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
