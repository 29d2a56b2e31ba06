import { redirect, type RequestEvent } from '@sveltejs/kit';
import { print } from 'graphql';
import type { ResultOf, TadaDocumentNode, VariablesOf } from '../../../../server/graphql/typed.ts';
import type { GraphQLResponse, TesseraBridge } from '../../../../server/portal-contract.ts';
import { STATUS_BY_CODE } from '../../../../server/errors/http.ts';

export type { GraphQLResponse, TesseraBridge };
export { graphql, type FragmentOf, type ResultOf, type VariablesOf } from '../../../../server/graphql/typed.ts';

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

/** Where a person sets up a second factor: /portal/security with its section opened. */
export const ENROL_PATH = '/portal/security';

/** The page that sets up a second factor, opened, asking to come back to `returnTo` (a path of ours) afterwards. */
export function enrolUrl(returnTo?: string | null): string {
	const query = new URLSearchParams({ enrol: '1' });
	if (returnTo) query.set('return_to', returnTo);
	return `${ENROL_PATH}?${query}`;
}

/** The page a request is for: a form action's address (`?/rename`) is not one, its path alone is. */
const pageOf = (event: Partial<Pick<RequestEvent, 'url' | 'request'>>) =>
	event.url && (event.request?.method === 'GET' ? event.url.pathname + event.url.search : event.url.pathname);

/**
 * Runs one GraphQL operation as the current session (or anonymously) and returns its `data`.
 * Top-level errors throw GraphQLRequestError; typed errors in a mutation's result are plain data.
 *
 * The one exception: an organization that requires a second factor refuses everything of a session whose person
 * has none (mfa_enrollment_required, docs/architecture.md#second-factors). Every page and action of the portal is
 * then sent, from here, to set one up (a redirect, which loads and actions pass on as Kit's own), and back after;
 * the setup page's own operations are never refused so, so it never sends itself there.
 */
export async function gql<Document extends AnyDocument>(
	event: BridgeEvent,
	document: Document,
	variables?: VariablesOf<Document>,
): Promise<ResultOf<Document>>;
/** @deprecated An operation as a string, its data typed by hand: the routes not yet moved to `graphql()` documents. */
export async function gql<TData>(
	event: BridgeEvent,
	document: string,
	variables?: Record<string, unknown>,
): Promise<TData>;
export async function gql(event: BridgeEvent, document: AnyDocument | string, variables?: unknown): Promise<unknown> {
	const text = typeof document === 'string' ? document : source(document);
	const result = await bridge(event).graphql(text, variables as Record<string, unknown> | undefined, {
		sessionToken: sessionToken(event) ?? null,
	});
	if (result.errors?.length) {
		const failure = new GraphQLRequestError(result.errors);
		// Every caller passes its RequestEvent; the type asks only for what the call itself needs.
		const page = event as Partial<Pick<RequestEvent, 'url' | 'request'>>;
		if (failure.code === 'mfa_enrollment_required' && page.url && page.url.pathname !== ENROL_PATH)
			redirect(303, enrolUrl(pageOf(page)));
		throw failure;
	}
	if (result.data == null) throw new Error('GraphQL response carried neither data nor errors');
	return result.data;
}

/** A typed document: its own `ResultOf` and `VariablesOf` say what it returns and takes. */
export type AnyDocument = TadaDocumentNode<any, any>;

/** The bridge's executor caches documents by their text: each document is printed once. */
const printed = new WeakMap<AnyDocument, string>();
function source(document: AnyDocument): string {
	let text = printed.get(document);
	if (text === undefined) printed.set(document, (text = print(document)));
	return text;
}
