import { redirect, type RequestEvent } from '@sveltejs/kit';
import { print } from 'graphql';
import { graphql, type ResultOf, type TadaDocumentNode, type VariablesOf } from '../../../../server/graphql/typed.ts';
import type { GraphQLResponse, TesseraBridge } from '../../../../server/portal-contract.ts';
import { STATUS_BY_CODE } from '../../../../server/errors/http.ts';

export type { GraphQLResponse, TesseraBridge };
export { graphql, type FragmentOf, type ResultOf, type VariablesOf } from '../../../../server/graphql/typed.ts';

/** A member's role, as schema.graphql's Role enum has it. */
export type Role = ReturnType<typeof graphql.scalar<'Role'>>;

/**
 * A mutation's typed refusal, a problem the user can correct: each result union spreads it, as
 * `... on UserError { ...UserErrorFields }` or `...UserErrorFields`, with `__typename` beside it to tell it apart.
 */
export const USER_ERROR_FIELDS = graphql(`
	fragment UserErrorFields on UserError {
		code
		message
		details {
			path
			message
		}
	}
`);

export type UserError = ResultOf<typeof USER_ERROR_FIELDS>;

/** One problem of a UserError, or of a top-level error's `extensions.details`. */
export type FieldProblem = UserError['details'][number];

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
	/** The first error's `extensions.details`: the field problems of invalid_request, the connection of sso_required. */
	readonly details: FieldProblem[];

	constructor(errors: NonNullable<GraphQLResponse['errors']>) {
		super(errors.map((e) => e.message).join('; '));
		this.name = 'GraphQLRequestError';
		this.code = errors[0]?.extensions?.code;
		this.status = (this.code && STATUS_BY_CODE[this.code]) || 500;
		this.errors = errors;
		const details = errors[0]?.extensions?.details;
		this.details = Array.isArray(details) ? details.filter(isProblem) : [];
	}
}

const isProblem = (value: unknown): value is FieldProblem =>
	typeof value === 'object' &&
	value !== null &&
	'path' in value &&
	typeof value.path === 'string' &&
	'message' in value &&
	typeof value.message === 'string';

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
// The executor has checked the document against schema.graphql, so its data has the document's ResultOf: this
// signature is where the portal trusts that, once.
export async function gql(event: BridgeEvent, document: AnyDocument, variables?: unknown) {
	if (variables !== undefined && !isRecord(variables)) throw new TypeError("An operation's variables are an object");
	return execute(event, document, variables);
}

/** An object (not null): what an operation's variables, and the data of its fields, are. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
	typeof value === 'object' && value !== null;

/** gql() for a caller that reads the answer's shape itself (a page of a list: paging.ts): the data as it came. */
export async function execute(
	event: BridgeEvent,
	document: AnyDocument,
	variables?: Record<string, unknown>,
): Promise<unknown> {
	const result = await bridge(event).graphql(source(document), variables, {
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
	const data: unknown = result.data;
	if (data == null) throw new Error('GraphQL response carried neither data nor errors');
	return data;
}

/** A typed document: its own `ResultOf` and `VariablesOf` say what it returns and takes (`never`: any variables). */
export type AnyDocument = TadaDocumentNode<unknown, never>;

/** The bridge's executor caches documents by their text: each document is printed once. */
const printed = new WeakMap<AnyDocument, string>();
function source(document: AnyDocument): string {
	let text = printed.get(document);
	if (text === undefined) printed.set(document, (text = print(document)));
	return text;
}
